"""batchspec ``vectorized``: a fast torch backend of the packed-batch contract.

Written as an outside backend author would write one, from SPEC.md: it depends on torch,
numpy and zephon, not on the conformance suite. Every tensor function works on the whole
batch at once (no Python loop over tokens, documents or rows in the tensor work), so the same
code runs on CUDA; each module's docstring gives its cost model. The rules without tensor work
(option checks, records, token field, output device, pad values) are this backend's own too, in
the public ``rules`` module that other backends may reuse; no private name of the reference is
used. Taken from the reference, by public name: the contract types, constants and their
validation, ``Datum`` (the class; ``collate_datums`` is this backend's) and ``ZephonDataLoader``
(whose cost is Zephon's). ``default_collater``, ``packed_sequence_thd_collater`` and
``collate_datums`` delegate a few unusual input classes to the reference, each a named
predicate checked before the fast path (``backends/vectorized/README.md`` lists them with the
reason and the share of the suite's calls; ``paths`` chooses and counts them).

Use: ``pytest conformance --backend=vectorized [--device=cuda]``.
"""

from batchspec.backends.vectorized.attention import adapt_model_inputs, enable_xdoc_attention
from batchspec.backends.vectorized.collaters import (
    default_collater,
    pack_features_for_thd,
    packed_sequence_thd_collater,
)
from batchspec.backends.vectorized.convert import convert_text_batch
from batchspec.backends.vectorized.datum import Datum, collate_datums
from batchspec.backends.vectorized.metadata import build_packed_sequence_metadata, get_unpad_data
from batchspec.backends.vectorized.output import convert_batch_output
from batchspec.reference import (
    DEFAULT_PACKED_SEQUENCE_CONTRACT,
    BatchOutputFormat,
    PackedMaskType,
    PackedSequenceContract,
    PackedSequenceMetadata,
    TrainingBatch,
    ZephonDataLoader,
    require_supported_packing_contract,
)

__version__ = "0.1.0"

# The SPEC.md version this backend implements.
BATCHSPEC_SPEC_VERSION = "1.5"

# The SPEC.md profiles this backend implements (SPEC.md, "Conformance"). Declared one by one:
# a test of a profile left out reports "not supported" instead of failing, and "thd" and
# "unpacked" (options of convert_text_batch) must be declared to be tested at all.
BATCHSPEC_CAPABILITIES = frozenset(
    {
        "contract_types",
        "unpad_data",
        "packed_metadata",
        "adapt_model_inputs",
        "convert_text_batch",
        "xdoc",
        "thd",
        "unpacked",
        "convert_batch_output",
        "datum",
        "collaters",
        # ZephonDataLoader is the reference's: its iteration and state come with it
        "zephon_loader",
        "zephon_state",
        "zephon_state_multirank",
    }
)

__all__ = [
    "BATCHSPEC_CAPABILITIES",
    "BATCHSPEC_SPEC_VERSION",
    "DEFAULT_PACKED_SEQUENCE_CONTRACT",
    "BatchOutputFormat",
    "Datum",
    "PackedMaskType",
    "PackedSequenceContract",
    "PackedSequenceMetadata",
    "TrainingBatch",
    "ZephonDataLoader",
    "adapt_model_inputs",
    "build_packed_sequence_metadata",
    "collate_datums",
    "convert_batch_output",
    "convert_text_batch",
    "default_collater",
    "enable_xdoc_attention",
    "get_unpad_data",
    "pack_features_for_thd",
    "packed_sequence_thd_collater",
    "require_supported_packing_contract",
]
