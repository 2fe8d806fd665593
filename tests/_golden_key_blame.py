"""Running stored golden cases against the reference with one output key changed, for the tests of
``conformance/golden/key_blame.py`` (``tests/unit/test_golden_key_blame.py`` and
``tests/runs/test_golden_key_blame_metadata.py``).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from batchspec import reference
from batchspec.conformance.golden.key_blame import cited_clauses
from batchspec.conformance.golden.runner import run_stored_case
from batchspec.conformance.helpers.asserts import ClauseFailure


def _backend(**overrides) -> SimpleNamespace:
    names = {name: getattr(reference, name) for name in reference.__all__}
    return SimpleNamespace(**{**names, **overrides})


def _bumped(value):
    """``value`` with its first element changed by one (a tensor) or plus one (an int)."""
    if isinstance(value, torch.Tensor):
        out = value.clone()
        out.view(-1)[0] += 1
        return out
    return value + 1


def _blamed(backend, case) -> tuple[str, ...]:
    with pytest.raises(ClauseFailure) as failure:
        run_stored_case(backend, case)
    return failure.value.clauses


def _narrowed(clauses, case) -> tuple[str, ...]:
    cited = cited_clauses(case.clauses)
    return tuple(c for c in clauses if c in cited) or tuple(clauses)
