"""How a failure is blamed (conformance/run/failure_blame.py): the record's ``blame``, one kind per way,
and the note of an exception raised on a valid input, added only when it fails the test."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from batchspec.conformance.helpers.asserts import ClauseFailure, SuiteError, assert_raises
from batchspec.conformance.run.backends import Backend
from batchspec.conformance.run.failure_blame import (
    CLAUSE_CHECK,
    EVERY_CITED_CLAUSE,
    RAISED_ON_VALID_INPUT,
    SUITE_ERROR,
    blame_failure,
    note_raised_on_valid_input,
)
from batchspec.conformance.run.spec import spec_clauses

CITED = ["unpad-binary", "unpad-outputs"]


def _raising_unpad(attention_mask):
    raise RuntimeError("kernel failed")


BACKEND = Backend("planted", "0", frozenset(), True, "1.2", SimpleNamespace(get_unpad_data=_raising_unpad))


def _raised() -> Exception:
    try:
        BACKEND.get_unpad_data(None)
    except RuntimeError as error:
        return error
    raise AssertionError("the planted function did not raise")


@pytest.mark.parametrize(
    ("error", "blamed", "how"),
    [
        (ClauseFailure("max_seqlen differs", "unpad-outputs"), ["unpad-outputs"], [CLAUSE_CHECK]),
        (_raised(), ["unpad-errors"], [RAISED_ON_VALID_INPUT]),
        (AssertionError("assert 1 == 2"), CITED, [EVERY_CITED_CLAUSE]),
        (RuntimeError("raised by the test's own code"), CITED, [EVERY_CITED_CLAUSE]),
        (None, CITED, [EVERY_CITED_CLAUSE]),
        (SuiteError("rank 0 wrote no result"), [], [SUITE_ERROR]),
        (
            ExceptionGroup("two", [ClauseFailure("a", "unpad-outputs"), _raised()]),
            ["unpad-outputs", "unpad-errors"],
            [CLAUSE_CHECK, RAISED_ON_VALID_INPUT],
        ),
        (
            ExceptionGroup("two", [_raised(), KeyError("k")]),
            ["unpad-errors", *CITED],
            [RAISED_ON_VALID_INPUT, EVERY_CITED_CLAUSE],
        ),
    ],
    ids=["check", "raised", "assert", "other", "no-exception", "suite", "check+raised", "raised+other"],
)
def test_each_failure_says_how_it_was_blamed(error, blamed, how):
    blame = blame_failure(error, CITED, spec_clauses())
    assert blame.blamed == blamed and blame.how == how
    assert blame.outcome == ("suite error" if how == [SUITE_ERROR] else "failed")


def test_the_valid_input_note_is_added_only_to_an_exception_the_test_did_not_catch():
    """An error check whose input has the fault catches the backend's wrong exception type and
    fails on its own clause; that exception gets no note saying the input had no fault."""
    with pytest.raises(ClauseFailure) as caught:
        assert_raises(ValueError, ("attention_mask",), BACKEND.get_unpad_data, None, clause="unpad-errors")
    note_raised_on_valid_input(caught.value)
    cause = caught.value.__cause__
    assert isinstance(cause, RuntimeError) and not getattr(cause, "__notes__", None)
    assert blame_failure(caught.value, CITED, spec_clauses()).how == [CLAUSE_CHECK]

    escaped = _raised()
    note_raised_on_valid_input(escaped)
    note_raised_on_valid_input(escaped)  # once, however often the hook sees it
    assert len(escaped.__notes__) == 1 and "none of the faults [unpad-errors]" in escaped.__notes__[0]
