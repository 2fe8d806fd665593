"""batchspec reference: a deliberately simple implementation of the packed-batch contract.

Every public name is re-exported here, with the signature of SPEC.md's table [api-signatures];
each function's docstring cites the SPEC.md clauses it implements. Readability beats speed: faster code belongs in a backend.
"""

from batchspec.reference.attention import adapt_model_inputs, enable_xdoc_attention
from batchspec.reference.checkpoint import (
    decode_state,
    encode_state,
    pipeline_description,
    pipeline_fingerprint,
    pipeline_topology,
)
from batchspec.reference.collaters import default_collater, pack_features_for_thd, packed_sequence_thd_collater
from batchspec.reference.contract import (
    BATCH_OUTPUT_FORMATS,
    CROSS_ENTROPY_IGNORE_IDX,
    DEFAULT_PACKED_SEQUENCE_CONTRACT,
    PACKED_MASK_TYPES,
    THD_LENGTH_PAD,
    BatchOutputFormat,
    PackedMaskType,
    PackedSequenceContract,
    PackedSequenceMetadata,
    TrainingBatch,
    contract_requests_metadata,
    require_supported_packing_contract,
)
from batchspec.reference.convert import TOKEN_FIELD_CANDIDATES, convert_text_batch
from batchspec.reference.datum import Datum, collate_datums
from batchspec.reference.loader import ZephonDataLoader
from batchspec.reference.metadata import build_packed_sequence_metadata, get_seqlens_in_batch, get_unpad_data
from batchspec.reference.output import (
    apply_batched_output,
    block_causal_mask,
    check_output_format,
    convert_batch_output,
)

__version__ = "0.1.0"

# The SPEC.md version this backend implements; the suite refuses a backend of another major.
BATCHSPEC_SPEC_VERSION = "1.5"

# What this backend implements, in the names conformance/run/backends.py defines. A conformance
# test that needs a capability missing here reports "not supported" instead of failing.
BATCHSPEC_CAPABILITIES = frozenset(
    {
        "contract_types",
        "unpad_data",
        "packed_metadata",
        "adapt_model_inputs",
        "convert_text_batch",
        "zephon_loader",
        "zephon_state",
        "zephon_state_multirank",
        "xdoc",
        "thd",
        "unpacked",
        "convert_batch_output",
        "datum",
        "collaters",
    }
)

__all__ = [
    "BATCHSPEC_CAPABILITIES",
    "BATCHSPEC_SPEC_VERSION",
    "BATCH_OUTPUT_FORMATS",
    "BatchOutputFormat",
    "CROSS_ENTROPY_IGNORE_IDX",
    "DEFAULT_PACKED_SEQUENCE_CONTRACT",
    "Datum",
    "PACKED_MASK_TYPES",
    "PackedMaskType",
    "PackedSequenceContract",
    "PackedSequenceMetadata",
    "THD_LENGTH_PAD",
    "TOKEN_FIELD_CANDIDATES",
    "TrainingBatch",
    "ZephonDataLoader",
    "adapt_model_inputs",
    "apply_batched_output",
    "block_causal_mask",
    "build_packed_sequence_metadata",
    "check_output_format",
    "collate_datums",
    "contract_requests_metadata",
    "decode_state",
    "encode_state",
    "convert_batch_output",
    "convert_text_batch",
    "default_collater",
    "enable_xdoc_attention",
    "get_seqlens_in_batch",
    "get_unpad_data",
    "pack_features_for_thd",
    "pipeline_description",
    "pipeline_fingerprint",
    "pipeline_topology",
    "packed_sequence_thd_collater",
    "require_supported_packing_contract",
]
