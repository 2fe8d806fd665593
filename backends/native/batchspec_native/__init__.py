"""batchspec_native: a native (Rust) backend of the batchspec packed-batch contract.

``convert_text_batch``'s hot path, ``build_packed_sequence_metadata`` and ``get_unpad_data``
run in a std-only Rust library (``src/``) behind a C ABI, called through ctypes over torch
buffers (``convert.py``, ``metadata.py``). Every other name of the contract is
``batchspec.backends.vectorized``'s public one (README.md lists them).

Use: ``pip install ./backends/native`` then ``batchspec --backend=native --release``.
"""

from batchspec.backends.vectorized import (
    DEFAULT_PACKED_SEQUENCE_CONTRACT,
    Datum,
    ZephonDataLoader,
    adapt_model_inputs,
    collate_datums,
    convert_batch_output,
    default_collater,
    enable_xdoc_attention,
    pack_features_for_thd,
    packed_sequence_thd_collater,
    require_supported_packing_contract,
)
from batchspec_native.convert import convert_text_batch
from batchspec_native.metadata import build_packed_sequence_metadata, get_unpad_data

__version__ = "0.1.0"

# The SPEC.md version this backend implements: 1.5. 1.3's [global-state] holds for its native
# calls (ctypes over torch buffers: no torch setting is touched) and 1.4's [state-body-valid]
# comes with vectorized's ZephonDataLoader (the reference's, which checks the body at load);
# 1.5's [dcoll-divisible-zero] with vectorized's default_collater.
BATCHSPEC_SPEC_VERSION = "1.5"

# The SPEC.md profiles it implements (SPEC.md, "Conformance"): its own three functions and the
# rest through vectorized's public names.
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
        "zephon_loader",
        "zephon_state",
        "zephon_state_multirank",
    }
)

__all__ = [
    "BATCHSPEC_CAPABILITIES",
    "BATCHSPEC_SPEC_VERSION",
    "DEFAULT_PACKED_SEQUENCE_CONTRACT",
    "Datum",
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
