"""Mutants of the ``triton`` backend: its ``kernels.py`` with one line changed (issue 33).

``kernel_mutant(version, old, new)`` loads ``backends/triton/kernels.py`` with the one line
``old`` replaced by ``new`` (from a temporary file: ``triton.jit`` reads a kernel's source), puts
its kernels in place of the backend's for this process (each mutant runs in its own), and
returns the backend object. The backend refuses to load on CPU without ``TRITON_INTERPRET=1``,
so these mutants run only as ``TRITON_INTERPRET=1 .venv/bin/python tests/mutants/sweep.py mt_<name>``;
the sweep's daily sample leaves them out (``sweep.py``: names starting ``mt_``).
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from types import SimpleNamespace

__all__ = ["kernel_mutant"]


def kernel_mutant(version: str, old: str, new: str) -> SimpleNamespace:
    """The triton backend with the line ``old`` of ``kernels.py`` replaced by ``new``.

    Raises:
        ValueError: ``old`` is not exactly one line of ``kernels.py``.
    """
    from batchspec.backends import triton as backend
    from batchspec.backends.triton import kernels

    source = Path(kernels.__file__).read_text(encoding="utf-8")
    if source.count(old) != 1:
        raise ValueError(f"the mutated line must occur once in kernels.py: {old!r} occurs {source.count(old)} times")
    folder = Path(tempfile.mkdtemp(prefix="batchspec-triton-mutant-"))
    path = folder / "kernels_mutant.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("batchspec_triton_kernels_mutant", path)
    assert spec is not None and spec.loader is not None
    mutated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mutated)
    # every kernel (a JITFunction, or an InterpretedFunction under TRITON_INTERPRET=1): the backend
    # looks them up on ``kernels`` at each call
    kernel_type = type(kernels.span_count_kernel)
    swapped = [name for name, value in vars(mutated).items() if isinstance(value, kernel_type)]
    if not swapped:
        raise ValueError(f"no kernel of type {kernel_type.__name__} in the mutated kernels.py")
    for name in swapped:
        setattr(kernels, name, getattr(mutated, name))
    names = {name: getattr(backend, name) for name in backend.__all__}
    names["__version__"] = version
    return SimpleNamespace(**names)
