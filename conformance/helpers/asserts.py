"""Exact-tensor asserts that explain themselves.

Every message has one shape: ``<what>: <actual>, but should be <expected> [<clause>: <call>]``.
A whole-tensor comparison runs first; only when it fails are the first mismatching indices
listed, with a summary (shape, dtype) of both tensors. Integer tensors must match exactly,
dtype included. ``assert_equal`` compares whole nested outputs (the golden cases') the same way.

An expected error is checked by type (subclasses allowed) and by the facts its message must
name (``names``): SPEC.md ("Conformance", **Errors**) makes no error sentence normative.

Every failing check raises ``ClauseFailure``, an ``AssertionError`` that carries the ids of the
clauses it failed on; the plugin blames a failure on them (read from the exception, never from
its text). ``SuiteError`` is the suite's own machinery failing (a harness error): it is reported
as a suite error and blamed on no clause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest
import torch

__all__ = [
    "ClauseFailure",
    "Fact",
    "Shape",
    "SuiteError",
    "Value",
    "assert_batch_equal",
    "assert_equal",
    "assert_keys",
    "assert_raises",
    "assert_tensor_equal",
    "call_valid",
    "check",
    "clause_failure",
    "missing_facts",
    "names",
    "skip",
    "skip_reason",
    "summary",
    "tag",
    "valid_input",
]

# how a skip's message carries its fix: "<reason>; fix: <what to do>" (``skip``, ``skip_reason``)
_FIX = "; fix: "
MULTIRANK_EXTRA = 'pip install "batchspec[multirank]"'
MODEL_EXTRA = 'pip install "batchspec[model]"'


def skip(reason: str, fix: str, *, allow_module_level: bool = False) -> NoReturn:
    """Skip the running test (or module) for ``reason``; the report shows ``fix``, what makes
    the test run (``skip_reason`` reads both back from the message)."""
    pytest.skip(f"{reason}{_FIX}{fix}", allow_module_level=allow_module_level)


def skip_reason(message: str) -> tuple[str, str | None]:
    """``(reason, fix)`` of a skip's message; the fix is None when the skip named none."""
    reason, _, fix = message.partition(_FIX)
    return reason, fix or None


MAX_MISMATCHES = 8


class ClauseFailure(AssertionError):
    """A conformance check that failed on SPEC clauses.

    Args:
        message: what differs: the input or call, the expected and the actual value.
        clauses: the clause ids the failure is blamed on: one id, several joined by commas, or
            an iterable of ids; a cited item (``ctb-input-errors.4``) counts for its clause.

    ``clauses`` (a tuple of clause ids, in the order given) is what the plugin reads.
    """

    def __init__(self, message: str, clauses: str | Iterable[str]) -> None:
        super().__init__(message)
        given = clauses.split(",") if isinstance(clauses, str) else list(clauses)
        self.clauses: tuple[str, ...] = tuple(dict.fromkeys(c.strip().split(".")[0] for c in given if c.strip()))
        if not self.clauses:
            raise ValueError(f"ClauseFailure needs at least one clause id, got {clauses!r}")


class SuiteError(Exception):
    """The suite's own machinery failed (e.g. rank processes that could not start): the run
    cannot judge the backend on this test, so no clause is blamed."""


def tag(clause: str | Iterable[str], call: str = "") -> str:
    """The clause tag that ends a failure's headline: ``[ctb-shift]``, or ``[ctb-shift: <call>]``
    naming the call that failed; several clauses are joined by commas, a string is shown as given."""
    shown = clause if isinstance(clause, str) else ", ".join(clause)
    return f"[{shown}: {call}]" if call else f"[{shown}]"


def clause_failure(message: str, *, clause: str | Iterable[str], call: str = "", details: str = "") -> ClauseFailure:
    """The ``ClauseFailure`` blamed on ``clause`` whose message is ``message``, the clause tag
    (``tag(clause, call)``) and ``details`` (raw text after the tag, e.g. ``":\n<rank output>"``):
    a check names its clause once, in ``clause=``, never in ``message``."""
    headline = f"{message} {tag(clause, call)}" if message else tag(clause, call)
    return ClauseFailure(headline + details, clause)


def check(condition: Any, message: str, *, clause: str | Iterable[str], call: str = "", details: str = "") -> None:
    """``check(ok, "...", clause="ctb-shift")`` is ``assert ok, "... [ctb-shift]"``, raising the
    ``ClauseFailure`` blamed on ``clause`` (see ``clause_failure``, which renders the message)."""
    __tracebackhide__ = True
    if not condition:
        raise clause_failure(message, clause=clause, call=call, details=details)


@contextmanager
def valid_input(call: str, clause: str = "ctb-input-errors") -> Iterator[None]:
    """Inside, the code under test runs on an input with none of the faults ``clause`` lists
    (a drawn in-contract input the reference converts): any exception it raises is a
    ``ClauseFailure`` blamed on ``clause`` (SPEC.md, "Raising on a valid input"), not on every
    clause of the test. The suite's own ``ClauseFailure`` and ``SuiteError`` propagate."""
    __tracebackhide__ = True
    try:
        yield
    except (ClauseFailure, SuiteError):
        raise
    except Exception as error:
        raise clause_failure(
            f"raised {type(error).__name__}({error}) on an input with none of the faults it lists, but should "
            "convert it",
            clause=clause,
            call=call,
        ) from error


def call_valid(function, *args: Any, clause: str, call: str) -> Any:
    """``function(*args)`` on a valid input: any exception fails on ``clause``, the function's
    error clause (SPEC.md, "Conformance": raising on a valid input breaks it)."""
    __tracebackhide__ = True
    try:
        return function(*args)
    except Exception as error:  # a valid input of an admitted dtype must give its outputs
        raise clause_failure(
            f"raised {type(error).__name__}({error}) on a valid input, but should return its outputs",
            clause=clause,
            call=call,
        ) from error


def summary(value: Any) -> str:
    """A one-line description: ``Tensor[shape=(2, 8), dtype=torch.int64]`` or the repr."""
    if isinstance(value, torch.Tensor):
        return f"Tensor[shape={tuple(value.shape)}, dtype={value.dtype}]"
    return f"{type(value).__name__} {value!r}"


def _show(value: Any) -> str:
    if isinstance(value, torch.Tensor) and value.numel() <= 64:
        return f"{value.tolist()} ({summary(value)})"
    return summary(value)


def assert_tensor_equal(name: str, actual: Any, expected: torch.Tensor, *, clause: str, call: str = "") -> None:
    """``assert_tensor_equal("labels", out, exp, clause=...)`` is equivalent to
    ``assert out.dtype == exp.dtype and out.shape == exp.shape and torch.equal(out, exp)``."""
    __tracebackhide__ = True
    where = tag(clause, call)
    if not isinstance(actual, torch.Tensor):
        raise ClauseFailure(f"{name}: {summary(actual)}, but should be {summary(expected)} {where}", clause)
    if actual.dtype != expected.dtype:
        raise ClauseFailure(f"{name}.dtype={actual.dtype}, but should be {expected.dtype} {where}", clause)
    if tuple(actual.shape) != tuple(expected.shape):
        raise ClauseFailure(
            f"{name}.shape={tuple(actual.shape)}, but should be {tuple(expected.shape)} {where}", clause
        )
    if torch.equal(actual, expected):
        return
    bad = torch.nonzero(actual != expected, as_tuple=False)[:MAX_MISMATCHES]
    lines = [
        f"{name}[{', '.join(str(int(i)) for i in index)}]={actual[tuple(index)].item()!r}, "
        f"but should be {expected[tuple(index)].item()!r}"
        for index in bad
    ]
    total = int((actual != expected).sum())
    raise ClauseFailure(
        f"{name}: {total} element(s) differ {where}\n  "
        + "\n  ".join(lines)
        + f"\n  actual:   {_show(actual)}\n  expected: {_show(expected)}",
        clause,
    )


def assert_batch_equal(
    actual: Mapping[str, Any], expected: Mapping[str, Any], *, clause: str, call: str = "", keys: Any = None
) -> None:
    """Every key of ``expected`` (or only ``keys``) is present in ``actual`` and equal to it,
    tensors exactly (dtype included), other values with ``==`` and the same type."""
    __tracebackhide__ = True
    where = tag(clause, call)
    for key in expected if keys is None else keys:
        if key not in actual:
            raise ClauseFailure(
                f"key {key!r} is missing, but should be present; keys: {sorted(actual)} {where}", clause
            )
        _assert_leaf_equal(key, actual[key], expected[key], clause=clause, call=call)


def assert_equal(actual: Any, expected: Any, *, clause: str, call: str = "", path: str = "") -> None:
    """A nested value (mappings, lists, tensors, JSON scalars; a mapping may list only some of
    ``actual``'s keys) equals ``actual``: every key of an ``expected`` mapping is present and
    equal, a list has the same length (a tuple matches it) and equal items, tensors exactly
    (dtype included), other values with ``==`` and the same type. ``path`` names the value in
    messages (``output`` when empty)."""
    __tracebackhide__ = True
    name = path or "output"
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            shown = repr(expected) if not _has_tensor(expected) and len(repr(expected)) <= 300 else "a mapping"
            raise ClauseFailure(f"{name}: {summary(actual)}, but should be {shown} {tag(clause, call)}", clause)
        for key, want in expected.items():
            if key not in actual:
                raise ClauseFailure(
                    f"key {key!r} is missing, but should be present; keys: {list(actual)} {tag(clause, call)}",
                    clause,
                )
            assert_equal(actual[key], want, clause=clause, call=call, path=f"{path}.{key}" if path else key)
    elif isinstance(expected, list):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise ClauseFailure(f"{name}={summary(actual)}, but should be {expected!r} {tag(clause, call)}", clause)
        for i, (a, w) in enumerate(zip(actual, expected)):
            assert_equal(a, w, clause=clause, call=call, path=f"{name}[{i}]")
    else:
        _assert_leaf_equal(name, actual, expected, clause=clause, call=call)


def _assert_leaf_equal(name: str, actual: Any, expected: Any, *, clause: str, call: str) -> None:
    """A tensor exactly (``assert_tensor_equal``), anything else with ``==`` and the same type."""
    __tracebackhide__ = True
    if isinstance(expected, torch.Tensor):
        assert_tensor_equal(name, actual, expected, clause=clause, call=call)
    elif type(actual) is not type(expected) or actual != expected:
        raise ClauseFailure(f"{name}={summary(actual)}, but should be {summary(expected)} {tag(clause, call)}", clause)


def _has_tensor(value: Any) -> bool:
    """Whether a tensor lies anywhere inside ``value`` (mappings, lists, tuples, objects' attributes)."""
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, Mapping):
        return any(_has_tensor(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    return hasattr(value, "__dict__") and any(_has_tensor(v) for v in vars(value).values())


@dataclass(frozen=True)
class Shape:
    """A fact: a tensor shape, named as ``(2, 3)``, ``[2, 3]`` or ``torch.Size([2, 3])``
    (``(2,)`` or ``[2]`` for one dimension, ``()`` or ``[]`` for none)."""

    dims: tuple[int, ...]

    def __init__(self, *dims: int) -> None:
        object.__setattr__(self, "dims", tuple(int(d) for d in dims))

    def __str__(self) -> str:
        return str(self.dims)


@dataclass(frozen=True)
class Value:
    """A fact: a given value, named by its ``str()`` or its ``repr()`` (an empty string only by
    its ``repr()``)."""

    value: Any

    def __str__(self) -> str:
        return repr(self.value)


Fact = str | int | Shape | Value


def _word(text: str) -> str:
    """``text`` as a whole word: not inside a longer identifier (``ids`` is not named by
    ``input_ids``); edges that are not word characters need no boundary."""
    head = r"(?<!\w)" if re.match(r"\w", text[:1]) else ""
    tail = r"(?!\w)" if re.match(r"\w", text[-1:]) else ""
    return head + re.escape(text) + tail


def _integer(value: int) -> str:
    """``value`` as a whole decimal integer: not part of a larger number (``3`` is not named by
    ``30``, ``13``, ``3.5`` or ``-3``; a hyphen after a word, as in ``1-3``, is no sign)."""
    return r"(?:^|(?<=[^\d.\-])|(?<=[\w)\]]-))" + re.escape(str(value)) + r"(?!\d|\.\d)"


def _shape(dims: tuple[int, ...]) -> str:
    inner = r"\s*,\s*".join(str(d) for d in dims)
    trailing = r"\s*,?" if len(dims) == 1 else ""
    return rf"(?<![\d,])\s*(?:\(\s*{inner}{trailing}\s*\)|\[\s*{inner}\s*\])"


def names(message: str, fact: Fact) -> bool:
    """Whether an error message names ``fact`` (SPEC.md, "Conformance", **Errors**: the wording is not normative,
    only the facts a clause lists):

    * ``str``: a parameter, field, attribute or key name, or a check name such as
      ``"bad magic"``, present as a whole word (``ids`` is not named by ``input_ids``);
    * ``int`` (a record, row or rank index, a length, a given number): present as a whole
      decimal integer, not part of a larger number;
    * ``Shape(2, 3)``: the shape written as a tuple or a list;
    * ``Value(x)``: a given value, by its ``str()`` or ``repr()`` as a whole word.
    """
    if isinstance(fact, Shape):
        return re.search(_shape(fact.dims), message) is not None
    if isinstance(fact, Value):
        forms = {repr(fact.value)} | ({str(fact.value)} if str(fact.value) else set())
        return any(re.search(_word(form), message) for form in forms)
    if isinstance(fact, bool):
        return names(message, Value(fact))
    if isinstance(fact, int):
        return re.search(_integer(fact), message) is not None
    if isinstance(fact, str):
        return re.search(_word(fact), message) is not None
    raise TypeError(f"a fact is a str, an int, a Shape or a Value, got {type(fact).__name__} {fact!r}")


def missing_facts(message: str, facts: tuple[Fact, ...] | list[Fact]) -> list[Fact]:
    """The facts of ``facts`` that ``message`` does not name (see ``names``)."""
    return [fact for fact in facts if not names(message, fact)]


def assert_raises(
    error_type: type[BaseException], fields: tuple[Fact, ...], func, *args, clause: str, **kwargs
) -> BaseException:
    """Calling ``func`` must raise ``error_type`` (or a subclass) whose message names every
    fact in ``fields`` (``names``: whole words, whole integers, shapes, values); the wording
    around them is free. Separates "nothing raised" from "wrong error" and "a fact missing"."""
    __tracebackhide__ = True
    call = f"{getattr(func, '__name__', func)}(...)"
    try:
        func(*args, **kwargs)
    except error_type as error:
        message = str(error)
        missing = missing_facts(message, fields)
        if missing:
            shown = [str(f) if isinstance(f, (Shape, Value)) else f for f in missing]
            raise clause_failure(
                f"{type(error).__name__} message {message!r} does not name {shown}", clause=clause, call=call
            ) from error
        return error
    except Exception as error:  # report the wrong type
        raise clause_failure(
            f"raised {type(error).__name__}({error}), but should raise {error_type.__name__}", clause=clause, call=call
        ) from error
    raise clause_failure(f"nothing was raised, but should raise {error_type.__name__}", clause=clause, call=call)


def assert_keys(out: Mapping[str, Any], keys: list[str], *, clause: str, call: str, ordered: bool = True) -> None:
    """``assert_keys(out, keys, ...)`` is equivalent to ``assert list(out) == keys``: the same
    keys in the same order; with ``ordered=False``, ``assert sorted(out) == sorted(keys)``."""
    __tracebackhide__ = True
    if ordered and list(out) != keys:
        raise clause_failure(f"keys {list(out)}, but should be {keys} (in this order)", clause=clause, call=call)
    if not ordered and sorted(out) != sorted(keys):
        raise clause_failure(f"keys {sorted(out)}, but should be {sorted(keys)}", clause=clause, call=call)
