"""Errors: ``GoldenError``, and a case's expected error (``Case.error``): the error-type map
and its facts as JSON (``{"type": name, "facts": [...]}`` in a record)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batchspec.conformance.helpers.asserts import Fact, Shape, Value

__all__ = ["ERROR_TYPES", "GoldenError", "error_from_record", "error_record", "error_type"]


class GoldenError(Exception):
    """A golden file is unindexed, missing, tampered with, stale, or unreadable; or a
    reference disagrees with a canon case."""


# The error types a canon case may expect, by the name it is written and stored under.
ERROR_TYPES: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "KeyError": KeyError,
    "RuntimeError": RuntimeError,
    "IndexError": IndexError,
}


def error_type(name: str) -> type[Exception]:
    """The exception class a case's error names."""
    try:
        return ERROR_TYPES[name]
    except KeyError:
        raise GoldenError(f"unknown error type {name!r}; a case may expect one of {sorted(ERROR_TYPES)}") from None


def _fact_json(fact: Fact) -> Any:
    """A fact as JSON: a str or int as itself, ``{"shape": [...]}``, ``{"value": ...}``."""
    if isinstance(fact, Shape):
        return {"shape": list(fact.dims)}
    if isinstance(fact, Value):
        return {"value": fact.value}
    if isinstance(fact, (str, int)):
        return fact
    raise GoldenError(f"an error fact is a str, an int, a Shape or a Value, got {type(fact).__name__} {fact!r}")


def _fact_of(item: Any) -> Fact:
    if isinstance(item, Mapping) and set(item) == {"shape"}:
        return Shape(*item["shape"])
    if isinstance(item, Mapping) and set(item) == {"value"}:
        return Value(item["value"])
    return item


def error_record(error: tuple[str, tuple[Fact, ...]] | None) -> dict | None:
    """A case's ``error`` as stored in its record."""
    return None if error is None else {"type": error[0], "facts": [_fact_json(f) for f in error[1]]}


def error_from_record(stored: Mapping[str, Any]) -> tuple[type[Exception], tuple[Fact, ...]]:
    """A record's ``error``: the exception class and the facts its message must name."""
    return error_type(stored["type"]), tuple(_fact_of(f) for f in stored["facts"])
