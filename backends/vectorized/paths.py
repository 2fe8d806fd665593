"""Which code path each call of ``vectorized`` took: the fast path, or a named delegation.

Off unless the environment variable ``BATCHSPEC_VECTORIZED_PATHS`` names a file: then every call
of a function with a fast path counts ``(function, path)`` -- ``"fast"`` or the delegation's name
(backends/vectorized/README.md lists them) -- and the process appends its counts as one JSON line
``{"function:path": count, ...}`` to that file when it exits (each pytest-xdist worker writes its
own line). ``tests/runs/test_vectorized_paths.py`` reads them from the suite's vectorized run.
"""

from __future__ import annotations

import atexit
import json
import os
from collections import Counter

__all__ = ["ENV", "Delegate", "record"]

ENV = "BATCHSPEC_VECTORIZED_PATHS"

_FILE = os.environ.get(ENV)
_COUNTS: Counter[str] = Counter()


class Delegate(Exception):
    """Raised by a fast path for an input it leaves to the reference on purpose; ``reason`` is
    the delegation's name (backends/vectorized/README.md)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def record(function: str, path: str) -> None:
    """Count one call of ``function`` that took ``path`` (only when ``ENV`` is set)."""
    if _FILE:
        _COUNTS[f"{function}:{path}"] += 1


def _write() -> None:
    if _FILE and _COUNTS:
        with open(_FILE, "a", encoding="utf-8") as out:
            out.write(json.dumps(dict(_COUNTS)) + "\n")


atexit.register(_write)
