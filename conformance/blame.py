"""Blame: which SPEC clauses a failed test phase is blamed on (the record's ``blamed``,
conformance/records.py; statuses and the verdict: conformance/verdict.py).

A failure is blamed on the clauses its ``ClauseFailure`` carries (the suite's asserts raise it,
conformance/helpers/asserts.py); an exception that escaped a contract function the test called
(conformance/backends.py, ``raised_in``) on the clause that lists that function's faults
(SPEC.md, "Raising on a valid input"); any other failure of a test (a plain ``assert``, an
exception from elsewhere, a crash or a timeout) on every clause the test cites; a
``SuiteError`` (the suite's own machinery) on none, as a suite error.
"""

from __future__ import annotations

from batchspec.conformance.backends import raised_in
from batchspec.conformance.helpers.asserts import ClauseFailure, SuiteError
from batchspec.conformance.spec import spec_raising_clauses

__all__ = ["blame_failure"]


def _exceptions(error: BaseException) -> list[BaseException]:
    """``error``, or the leaves of an exception group (hypothesis reports several distinct
    failures of one test as a group)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _exceptions(inner)]
    return [error]


def blame_failure(error: BaseException | None, cited: list[str], known: dict[str, str]) -> tuple[str, list[str]]:
    """``(outcome, blamed clauses)`` of a failed test phase: a ``SuiteError``, or a
    ``ClauseFailure`` naming a clause SPEC.md does not define (a suite bug), is a suite error
    blamed on nothing; ``ClauseFailure``s are blamed on their clauses; an exception that escaped
    a contract function (``raised_in``: the backend raised where the test expects an output) on
    the clause listing that function's faults (SPEC.md, "Raising on a valid input"); any other
    failure on every cited clause."""
    errors = _exceptions(error) if error is not None else []
    if any(isinstance(e, SuiteError) for e in errors):
        return "suite error", []
    raising = spec_raising_clauses()
    carried = [
        c
        for e in errors
        for c in (e.clauses if isinstance(e, ClauseFailure) else (raising.get(raised_in(e) or ""),))
        if c is not None
    ]
    if any(c not in known for c in carried):
        return "suite error", []
    if carried and all(isinstance(e, ClauseFailure) or raised_in(e) in raising for e in errors):
        return "failed", list(dict.fromkeys(carried))
    return "failed", list(dict.fromkeys([*carried, *cited]))
