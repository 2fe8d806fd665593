"""Blame: which SPEC clauses a failed test phase is blamed on (the record's ``blamed``,
conformance/run/result_records.py; statuses and the verdict: conformance/run/verdict.py), and how (the
record's ``blame``, in report.json's failures).

A failure is blamed on the clauses its ``ClauseFailure`` carries (the suite's asserts raise it,
conformance/helpers/asserts.py): ``CLAUSE_CHECK``; an exception that escaped a contract
function the test called (conformance/run/backends.py, ``raised_in``) and then the test, where the
test expects an output, on the clause that lists that function's faults (SPEC.md, "Raising on
a valid input"): ``RAISED_ON_VALID_INPUT``; any other failure of a test (a plain ``assert``, an
exception from elsewhere, a crash or a timeout) on every clause the test cites:
``EVERY_CITED_CLAUSE``; a ``SuiteError`` (the suite's own machinery) on none, as a suite error:
``SUITE_ERROR``.
"""

from __future__ import annotations

from typing import NamedTuple

from batchspec.conformance.helpers.asserts import ClauseFailure, SuiteError
from batchspec.conformance.run.backends import raised_in
from batchspec.conformance.run.spec import spec_raising_clauses

__all__ = [
    "BLAME_KINDS",
    "CLAUSE_CHECK",
    "EVERY_CITED_CLAUSE",
    "RAISED_ON_VALID_INPUT",
    "SUITE_ERROR",
    "Blame",
    "blame_failure",
    "note_raised_on_valid_input",
]

# how a failure was blamed: the values of a record's ``blame`` (a list: a hypothesis group can
# hold failures of several kinds)
CLAUSE_CHECK = "clause check"  # a check of the suite failed (ClauseFailure): on the clauses it names
RAISED_ON_VALID_INPUT = "raised on a valid input"  # a backend function raised where an output was expected
EVERY_CITED_CLAUSE = "every cited clause"  # a plain assert, another exception, a crash, a timeout
SUITE_ERROR = "suite error"  # the suite's own machinery failed: no clause
BLAME_KINDS = (CLAUSE_CHECK, RAISED_ON_VALID_INPUT, EVERY_CITED_CLAUSE, SUITE_ERROR)


class Blame(NamedTuple):
    """A failed test phase's outcome (``failed`` or ``suite error``), the clauses it is blamed on,
    and how (``BLAME_KINDS``, in the order its exceptions gave them)."""

    outcome: str
    blamed: list[str]
    how: list[str]


def _exceptions(error: BaseException) -> list[BaseException]:
    """``error``, or the leaves of an exception group (hypothesis reports several distinct
    failures of one test as a group)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _exceptions(inner)]
    return [error]


def _kind(error: BaseException, raising: dict[str, str]) -> str:
    if isinstance(error, ClauseFailure):
        return CLAUSE_CHECK
    return RAISED_ON_VALID_INPUT if raised_in(error) in raising else EVERY_CITED_CLAUSE


def blame_failure(error: BaseException | None, cited: list[str], known: dict[str, str]) -> Blame:
    """The ``Blame`` of a failed test phase: a ``SuiteError``, or a ``ClauseFailure`` naming a
    clause SPEC.md does not define (a suite bug), is a suite error blamed on nothing;
    ``ClauseFailure``s are blamed on their clauses; an exception that escaped a contract
    function (``raised_in``: the backend raised where the test expects an output) on the clause
    listing that function's faults (SPEC.md, "Raising on a valid input"); any other failure on
    every cited clause."""
    errors = _exceptions(error) if error is not None else []
    if any(isinstance(e, SuiteError) for e in errors):
        return Blame("suite error", [], [SUITE_ERROR])
    raising = spec_raising_clauses()
    carried = [
        c
        for e in errors
        for c in (e.clauses if isinstance(e, ClauseFailure) else (raising.get(raised_in(e) or ""),))
        if c is not None
    ]
    if any(c not in known for c in carried):
        return Blame("suite error", [], [SUITE_ERROR])
    how = list(dict.fromkeys(_kind(e, raising) for e in errors)) or [EVERY_CITED_CLAUSE]
    if EVERY_CITED_CLAUSE not in how:
        return Blame("failed", list(dict.fromkeys(carried)), how)
    return Blame("failed", list(dict.fromkeys([*carried, *cited])), how)


def note_raised_on_valid_input(error: BaseException | None) -> None:
    """Add to each exception of a failed test that a contract function raised and the test did
    not catch (it expected an output there: ``RAISED_ON_VALID_INPUT``) a note naming the clause
    it is blamed on. An exception a check caught (an error check whose input has a fault, which
    blames the wrong type on its own clause) gets none: its input is not a valid one."""
    raising = spec_raising_clauses()
    for leaf in _exceptions(error) if error is not None else []:
        name = raised_in(leaf)
        if name not in raising or not isinstance(leaf, Exception):
            continue
        note = (
            f"(raised by the backend's {name} where the test expects an output, on an input with none of the "
            f"faults [{raising[name]}] lists: the suite blames [{raising[name]}])"
        )
        if note not in getattr(leaf, "__notes__", ()):
            leaf.add_note(note)
