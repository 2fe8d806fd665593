"""The contract's names and signatures ([api-signatures]), as data a check compares against.

``SIGNATURES`` is read from SPEC.md's [api-signatures] table (its one home) through the
records of ``conformance/run/functions.py`` (``ContractFunction.profile`` / ``.signature``) and maps each
name (``Datum.to_features`` for a method) to the profile that covers it and its parameters in
order: ``(name, kind, default)`` with kind ``"positional"`` (positional or keyword) or
``"keyword"`` (keyword-only) and default ``REQUIRED`` when there is none, or ``FACTORY`` for a
fresh empty mapping. ``signature_problems`` says how a backend's callable differs.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from batchspec.conformance.run.functions import FUNCTIONS

__all__ = ["FACTORY", "REQUIRED", "SIGNATURES", "signature_problems"]

REQUIRED = object()  # no default
FACTORY = object()  # a default made per call (an empty mapping of the object's own)

P, K = "positional", "keyword"


def _parameters(signature: str) -> tuple[tuple[str, str, Any], ...]:
    """``(a, b="x", *, c=None)`` -> ``(("a", P, REQUIRED), ("b", P, "x"), ("c", K, None))``;
    a ``{}`` default is ``FACTORY`` (a fresh empty mapping)."""
    function = ast.parse(f"def f{signature}: pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    arguments = function.args
    positional = arguments.args
    defaults = [REQUIRED] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)

    def value(node: Any) -> Any:
        if node is REQUIRED or node is None:
            return REQUIRED
        literal = ast.literal_eval(node)
        return FACTORY if literal == {} else literal

    return (
        *((a.arg, P, value(d)) for a, d in zip(positional, defaults)),
        *((a.arg, K, value(d)) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)),
    )


# name -> (profile, parameters), read from SPEC.md's [api-signatures] table (its one home) by the records
SIGNATURES: dict[str, tuple[str, tuple[tuple[str, str, Any], ...]]] = {
    name: (record.profile, _parameters(record.signature)) for name, record in FUNCTIONS.items()
}

_KINDS = {
    inspect.Parameter.POSITIONAL_OR_KEYWORD: P,
    inspect.Parameter.KEYWORD_ONLY: K,
    inspect.Parameter.POSITIONAL_ONLY: "positional-only",
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
}


def _shown(default: Any) -> str:
    return "no default" if default is REQUIRED else "a fresh {}" if default is FACTORY else f"default {default!r}"


def signature_problems(name: str, obj: Any) -> list[str]:
    """How ``obj``'s signature differs from ``SIGNATURES[name]`` (empty when it conforms).

    Checks, in the SPEC's order: each parameter exists under its name, is of its kind
    (positional-or-keyword, or keyword-only), has the given default (a factory default: an empty
    mapping), and the positional parameters come in the SPEC's order; a further parameter must
    be optional."""
    _, expected = SIGNATURES[name]
    try:
        parameters = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError) as error:
        return [f"{name}: no inspectable signature ({error})"]
    if parameters and parameters[0].name == "self":
        parameters = parameters[1:]
    actual = {p.name: p for p in parameters}
    problems = []
    for want_name, want_kind, want_default in expected:
        parameter = actual.get(want_name)
        if parameter is None:
            problems.append(f"{name}: parameter {want_name!r} is missing")
            continue
        kind = _KINDS[parameter.kind]
        if kind != want_kind:
            problems.append(f"{name}: parameter {want_name!r} is {kind}, but should be {want_kind}")
        default = parameter.default
        if want_default is REQUIRED:
            if default is not inspect.Parameter.empty:
                problems.append(f"{name}: parameter {want_name!r} has default {default!r}, but should have none")
        elif want_default is FACTORY:
            if default is inspect.Parameter.empty:
                problems.append(f"{name}: parameter {want_name!r} has no default, but should default to {{}}")
        elif default is inspect.Parameter.empty or type(default) is not type(want_default) or default != want_default:
            shown = "no default" if default is inspect.Parameter.empty else f"default {default!r}"
            problems.append(f"{name}: parameter {want_name!r} has {shown}, but should have {_shown(want_default)}")
    order = [p.name for p in parameters if _KINDS[p.kind] == P]
    # the SPEC's positional parameters that are there (a missing one is reported above)
    want_order = [n for n, k, _ in expected if k == P and n in order]
    if [n for n in order if n in want_order] != want_order or order[: len(want_order)] != want_order:
        problems.append(f"{name}: positional parameters are {order}, but should start with {want_order}")
    known = {n for n, _, _ in expected}
    for parameter in parameters:
        extra_required = parameter.default is inspect.Parameter.empty and parameter.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_ONLY,
        )
        if parameter.name not in known and extra_required:
            problems.append(f"{name}: parameter {parameter.name!r} is required, but the SPEC has no such parameter")
    return problems
