"""The contract's signatures ([api-signatures]): every name a backend's profiles cover has the
SPEC's parameter names, order, keyword-only markers and defaults (conformance/interface.py)."""

from __future__ import annotations

import pytest

from batchspec.conformance.helpers.asserts import check
from batchspec.conformance.interface import SIGNATURES, signature_problems

# Clauses that single out a signature rule besides [api-signatures].
EXTRA_CLAUSES = {
    "collate_datums": ("collate-keyword-only",),
    "Datum.to_features": ("collate-keyword-only", "datum-to-features"),
    "ZephonDataLoader": ("loader-construct-validates",),
}


def _lookup(backend, name: str):
    target = backend
    for part in name.split("."):
        target = getattr(target, part)
    return target


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.requires(profile), pytest.mark.clause("api-signatures", *EXTRA_CLAUSES.get(name, ()))],
        )
        for name, (profile, _) in SIGNATURES.items()
    ],
)
def test_signature_is_the_specs(backend, name):
    problems = signature_problems(name, _lookup(backend, name))
    tags = ", ".join(("api-signatures", *EXTRA_CLAUSES.get(name, ())))
    check(not problems, "\n".join(f"{problem} [{tags}: {name}]" for problem in problems), clause=tags)
