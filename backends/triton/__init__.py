"""batchspec ``triton``: a backend whose tensor work is Triton kernels (issue 33).

``get_unpad_data``, ``build_packed_sequence_metadata`` and ``convert_text_batch``'s positions,
document ids, segment starts, labels and padding mask run on ``@triton.jit`` kernels written for
a GPU (``kernels.py``); host glue and the functions not yet ported come from
``batchspec.backends.vectorized``'s public API (listed in this package's README.md).
On CPU the kernels run only under Triton's interpreter: importing this backend while
``TRITON_INTERPRET=1`` is unset and no CUDA device is present raises ``ImportError`` with the
command to use; it never falls back silently to other code.

Use: ``TRITON_INTERPRET=1 batchspec --backend=triton --release`` (CPU) or
``batchspec --backend=triton --device=cuda`` (GPU).
"""

from __future__ import annotations

try:
    import triton  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the triton backend needs the triton package: pip install -e '.[triton]' (or pip install 'batchspec[triton]')"
    ) from error
import torch

from batchspec.backends.triton.placement import INTERPRETER

if not INTERPRETER and not torch.cuda.is_available():
    raise ImportError(
        "the triton backend's kernels need a CUDA device, or Triton's interpreter on CPU: "
        "run with TRITON_INTERPRET=1 (e.g. TRITON_INTERPRET=1 batchspec --backend=triton --release)"
    )

from batchspec.backends.triton.convert import convert_text_batch
from batchspec.backends.triton.metadata import build_packed_sequence_metadata, get_unpad_data
from batchspec.backends.vectorized import (
    BATCHSPEC_CAPABILITIES,
    DEFAULT_PACKED_SEQUENCE_CONTRACT,
    BatchOutputFormat,
    Datum,
    PackedMaskType,
    PackedSequenceContract,
    PackedSequenceMetadata,
    TrainingBatch,
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

__version__ = "0.1.0"
# The SPEC.md version this backend implements: 1.4's one addition, [state-body-valid], comes with
# vectorized's ZephonDataLoader (the reference's, which checks the body at load); 1.5's
# [dcoll-divisible-zero] with vectorized's default_collater.
BATCHSPEC_SPEC_VERSION = "1.5"

__all__ = [
    "BATCHSPEC_CAPABILITIES",
    "BATCHSPEC_SPEC_VERSION",
    "DEFAULT_PACKED_SEQUENCE_CONTRACT",
    "INTERPRETER",
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
