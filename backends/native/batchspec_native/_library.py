"""The compiled library (``libbatchspec_native.so``, built from ``src/`` by the package's build)
and the C ABI's signatures, declared once for ctypes.

The library is loaded with ``ctypes.PyDLL``: its calls keep the GIL, which
``bs_ingest_sequence`` needs (it reads Python lists through CPython's C API).
"""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig
from pathlib import Path

__all__ = ["LIBRARY", "library_path"]

if sysconfig.get_config_var("Py_GIL_DISABLED"):
    # bs_ingest_sequence reads the object header of a GIL build (refcount, then type)
    raise ImportError("batchspec_native supports CPython builds with the GIL only (not free-threaded)")

_NAME = {"darwin": "libbatchspec_native.dylib", "win32": "batchspec_native.dll"}.get(
    sys.platform, "libbatchspec_native.so"
)


def library_path() -> Path:
    """Where the compiled library is: ``$BATCHSPEC_NATIVE_LIBRARY`` when set, else beside this module."""
    override = os.environ.get("BATCHSPEC_NATIVE_LIBRARY")
    return Path(override) if override else Path(__file__).with_name(_NAME)


def _load() -> ctypes.PyDLL:
    path = library_path()
    if not path.exists():
        raise ImportError(
            f"batchspec_native: the compiled library {path} is missing; build the package with "
            "`pip install ./backends/native` (needs cargo: https://rustup.rs)"
        )
    library = ctypes.PyDLL(str(path))
    i64, size, ptr, c_int = ctypes.c_int64, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
    signatures = {
        "bs_ingest_sequence": ([ctypes.py_object, ctypes.c_ssize_t, ptr, ptr], c_int),
        "bs_mask_stats": ([ptr, c_int, size, size, size, size, ptr], None),
        "bs_get_unpad_data": ([ptr, c_int, size, size, size, size, c_int, i64, ptr, size, ptr, size, ptr], None),
        "bs_build_packed_sequence_metadata": ([ptr, c_int, size, size, size, size, ptr, ptr, ptr, ptr], None),
        "bs_convert_rows": ([size, size, ptr, ptr, ptr, ptr, ptr, ptr, ptr, i64, c_int, c_int, i64, ptr, ptr], c_int),
        "bs_cu_from_rows": ([ptr, size, ptr, size, size, ptr], None),
        "bs_max_spans": ([ptr, size, size], size),
        "bs_thd_lengths": ([ptr, size, size, size, ptr, ptr], None),
        "bs_block_causal": ([ptr, size, size, ptr], None),
    }
    for name, (arguments, result) in signatures.items():
        function = getattr(library, name)
        function.argtypes = arguments
        function.restype = result
    return library


LIBRARY = _load()

# status codes of the C ABI (src/lib.rs)
INGEST_OK, INGEST_NOT_SEQUENCE, INGEST_BOOL, INGEST_NESTED, INGEST_OVERFLOW, INGEST_OTHER = range(6)
MASK_U8, MASK_I64 = 0, 1
CONVERT_OK, CONVERT_POSITIONS_START, CONVERT_POSITIONS_NEGATIVE = range(3)
SOURCE_SCRATCH, SOURCE_I64, SOURCE_I32 = range(3)
