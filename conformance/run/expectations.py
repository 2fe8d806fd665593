"""Expected failures, declared in the backend's own repository (``--expectations=FILE``).

A TOML file of ``[[expected]]`` entries, each with exactly one of

- ``test``: a test id, where ``*`` matches any run of characters and everything else is
  literal (the brackets of parametrized ids included), e.g.
  ``"conformance/test_goldens.py::test_golden_case[test_unpad_*]"``;
- ``clause``: a SPEC clause id, e.g. ``"ctb-input-errors"``;

and a ``reason`` (free text: what is wrong and where it is tracked) and a ``category``, one of
``CATEGORIES``. For example::

    [[expected]]
    clause = "unpacked-errors"
    category = "not implemented"
    reason = "pad_to_length validation lands in 2.3 (issue #41)"

A failing test is an *expected failure* when a ``test`` entry matches its id, or when a
``clause`` entry names every clause the failure is blamed on; it then counts for no clause's
FAIL and not against the verdict. A test that a ``test`` entry matches and that passes is an
*unexpected pass*, and so is a clause of a ``clause`` entry whose tests all pass; both are
reported, and ``--strict-expectations`` makes them fail the verdict (delete the entry once the
fix lands). An entry that matches no test of the run is reported as *stale*.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CATEGORIES",
    "Expectation",
    "ExpectationsError",
    "load_expectations",
    "match_failure",
    "match_test",
    "matches",
]

CATEGORIES = ("backend bug", "not implemented", "suite bug reported")


class ExpectationsError(ValueError):
    """The expectations file cannot be read or an entry is malformed."""


@dataclass(frozen=True)
class Expectation:
    """One ``[[expected]]`` entry; ``index`` is its 0-based position in the file."""

    index: int
    test: str | None
    clause: str | None
    reason: str
    category: str

    def describe(self) -> str:
        """``test <pattern>`` or ``clause <id>``, for reports."""
        return f"test {self.test}" if self.test is not None else f"clause {self.clause}"

    def as_dict(self) -> dict:
        key = "test" if self.test is not None else "clause"
        return {"entry": self.index, key: self.test or self.clause, "category": self.category, "reason": self.reason}


def load_expectations(path: str | Path, known_clauses: Iterable[str]) -> list[Expectation]:
    """The entries of ``path``.

    Raises:
        ExpectationsError: the file is missing or not TOML; an entry has neither or both of
            ``test`` and ``clause``, an empty ``reason``, a category outside ``CATEGORIES``, an
            unknown key, or names a clause SPEC.md does not define.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ExpectationsError(f"--expectations={path}: cannot be read as TOML: {error}") from None
    unknown_top = sorted(set(data) - {"expected"})
    if unknown_top:
        raise ExpectationsError(f"--expectations={path}: unknown top-level key(s) {unknown_top}; expected [[expected]]")
    entries = data.get("expected", [])
    if not isinstance(entries, list):
        raise ExpectationsError(f"--expectations={path}: 'expected' must be an array of tables ([[expected]])")
    known = set(known_clauses)
    out = []
    for index, entry in enumerate(entries):
        where = f"--expectations={path}: entry {index}"
        if not isinstance(entry, Mapping):
            raise ExpectationsError(f"{where}: expected a table, got {type(entry).__name__}")
        extra = sorted(set(entry) - {"test", "clause", "reason", "category"})
        if extra:
            raise ExpectationsError(f"{where}: unknown key(s) {extra}; allowed: test or clause, reason, category")
        test, clause = entry.get("test"), entry.get("clause")
        if (test is None) == (clause is None):
            raise ExpectationsError(
                f"{where}: give exactly one of 'test' (a test-id pattern) and 'clause' (a clause id)"
            )
        for name, value in (("test", test), ("clause", clause), ("reason", entry.get("reason"))):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ExpectationsError(f"{where}: {name} must be a non-empty string, got {value!r}")
        if entry.get("reason") is None:
            raise ExpectationsError(f"{where}: 'reason' is required (what is wrong, where it is tracked)")
        if entry.get("category") not in CATEGORIES:
            raise ExpectationsError(
                f"{where}: category must be one of {list(CATEGORIES)}, got {entry.get('category')!r}"
            )
        if clause is not None and clause not in known:
            head = clause.split(".")[0]
            hint = (
                f" (name the clause, {head!r}: failures are blamed per clause, not per item)" if head in known else ""
            )
            raise ExpectationsError(f"{where}: clause {clause!r} is not a clause of SPEC.md{hint}")
        out.append(Expectation(index, test, clause, entry["reason"], entry["category"]))
    return out


def matches(nodeid: str, pattern: str) -> bool:
    """Whether ``pattern`` (``*`` any run of characters, all else literal) matches ``nodeid``."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), nodeid, flags=re.S) is not None


def match_test(expectations: Iterable[Expectation], nodeid: str) -> Expectation | None:
    """The first ``test`` entry whose pattern matches ``nodeid``."""
    return next((e for e in expectations if e.test is not None and matches(nodeid, e.test)), None)


def match_failure(expectations: Iterable[Expectation], nodeid: str, blamed: Iterable[str]) -> Expectation | None:
    """The entry that makes a failure of ``nodeid`` blamed on ``blamed`` expected: a matching
    ``test`` entry, else a ``clause`` entry when every blamed clause has one (the first)."""
    expectations = list(expectations)
    by_test = match_test(expectations, nodeid)
    if by_test is not None:
        return by_test
    blamed = list(blamed)
    by_clause = {e.clause: e for e in reversed(expectations) if e.clause is not None}
    if blamed and all(clause in by_clause for clause in blamed):
        return by_clause[sorted(blamed)[0]]
    return None
