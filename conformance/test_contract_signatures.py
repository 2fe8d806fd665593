"""The contract's signatures ([api-signatures]): every name a backend's profiles cover has the
SPEC's parameter names, order, keyword-only markers and defaults (conformance/run/interface.py)."""

from __future__ import annotations

import inspect

import pytest

from batchspec.conformance.helpers.asserts import check
from batchspec.conformance.run.functions import FUNCTIONS
from batchspec.conformance.run.interface import REQUIRED, SIGNATURES, signature_problems

# Clauses that single out a signature rule besides [api-signatures]: each record's
# ``signature_clauses`` (conformance/run/functions.py).


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
            marks=[
                pytest.mark.requires(profile),
                pytest.mark.clause("api-signatures", *FUNCTIONS[name].signature_clauses),
            ],
        )
        for name, (profile, _) in SIGNATURES.items()
    ],
)
def test_signature_is_the_specs(backend, name):
    problems = signature_problems(name, _lookup(backend, name))
    tags = ", ".join(("api-signatures", *FUNCTIONS[name].signature_clauses))
    check(not problems, "; ".join(problems), clause=tags, call=name)


# the names whose signature has an output_format parameter, and its default in SPEC's table
FORMAT_DEFAULTS = {
    name: (profile, default)
    for name, (profile, parameters) in SIGNATURES.items()
    for parameter, _, default in parameters
    if parameter == "output_format"
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.requires(profile), pytest.mark.clause("types-output-format", "api-signatures")],
        )
        for name, (profile, _) in FORMAT_DEFAULTS.items()
    ],
)
def test_the_format_parameter_defaults_to_batched_where_it_has_a_default(backend, name):
    """[types-output-format]: the format parameter defaults to "batched" where the signature
    table gives it a default, and has none in convert_batch_output."""
    parameter = inspect.signature(_lookup(backend, name)).parameters.get("output_format")
    want = FORMAT_DEFAULTS[name][1]
    got = REQUIRED if parameter is None or parameter.default is inspect.Parameter.empty else parameter.default
    shown = {id(REQUIRED): "no default"}
    check(
        parameter is not None and (got is REQUIRED if want is REQUIRED else got == want),
        f"{name}: output_format has {shown.get(id(got), repr(got))}, but should have {shown.get(id(want), repr(want))}",
        clause="types-output-format",
        call=name,
    )
