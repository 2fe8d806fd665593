"""Every golden case of ``golden/`` (issue #5), run against the backend under test.

Cases are loaded only through the verified path of ``batchspec.conformance.tools.goldens``: each file must be
listed in ``golden/index.json`` with a matching sha256 before it is parsed (safetensors and
JSON, never pickle), and a file under ``golden/data`` that the index does not list fails
collection. Each case carries its SPEC clauses and the capabilities it needs.
"""

from __future__ import annotations

import pytest

from batchspec.conformance.tools.goldens import load_all, run_stored_case

CASES = load_all()


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c.name, marks=[pytest.mark.clause(*c.clauses), pytest.mark.requires(*c.capabilities)])
        for c in CASES
    ],
)
def test_golden_case(backend, case):
    """The backend's output equals the golden expectation exactly (dtypes included), or it
    raises the golden error type naming the golden facts (never a sentence); inputs are never
    modified."""
    run_stored_case(backend, case)
