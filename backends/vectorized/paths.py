"""Which code path each call of ``vectorized`` takes: the fast path, or a named delegation.

A function with a fast path declares its delegations as a table of ``(name, predicate)``
(backends/vectorized/README.md lists them with the input class and the measured share of the
suite's calls). ``choose`` evaluates the predicates on the call's inputs *before* any work, in
table order (a predicate may assume the ones before it did not hold), and returns the first
name that holds, or None for the fast path. A fast path therefore never decides to delegate
half-way: anything it raises is its own error and reaches the caller.

Counting is off unless the environment variable ``BATCHSPEC_VECTORIZED_PATHS`` names a file:
then every ``choose`` counts ``(function, path)`` -- ``"fast"`` or the delegation's name -- and
the process appends its counts as one JSON line ``{"function:path": count, ...}`` to that file
when it exits (each pytest-xdist worker writes its own line).
``tests/runs/test_vectorized_paths.py`` reads them from the suite's vectorized run.
"""

from __future__ import annotations

import atexit
import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ENV", "FAST", "Delegations", "choose", "record"]

ENV = "BATCHSPEC_VECTORIZED_PATHS"

# The path name of a call no predicate delegates.
FAST = "fast"

# (name, predicate on the call's arguments), in the order they are evaluated.
Delegations = Sequence[tuple[str, Callable[..., bool]]]

_FILE = os.environ.get(ENV)
_COUNTS: Counter[str] = Counter()


def record(function: str, path: str) -> None:
    """Count one call of ``function`` that took ``path`` (only when ``ENV`` is set)."""
    if _FILE:
        _COUNTS[f"{function}:{path}"] += 1


def choose(function: str, delegations: Delegations, *args: Any) -> str | None:
    """The name of the first of ``delegations`` whose predicate holds for ``args``, or None
    (the fast path); counted under ``function``."""
    for name, holds in delegations:
        if holds(*args):
            record(function, name)
            return name
    record(function, FAST)
    return None


def _write() -> None:
    if _FILE and _COUNTS:
        with open(_FILE, "a", encoding="utf-8") as out:
            out.write(json.dumps(dict(_COUNTS)) + "\n")


atexit.register(_write)
