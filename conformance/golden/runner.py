"""Running a stored case (``batchspec.conformance.golden.store``) against the backend under test, with
the suite's own asserts (conformance/helpers/asserts.py)."""

from __future__ import annotations

from typing import Any

from batchspec.conformance.golden.adapters import adapter, call
from batchspec.conformance.golden.errors import error_from_record
from batchspec.conformance.golden.store import StoredCase
from batchspec.conformance.helpers.asserts import assert_equal, assert_keys, assert_raises, check

__all__ = ["run_stored_case"]


def run_stored_case(impl: Any, case: StoredCase) -> None:
    """Run one stored case against ``impl`` (the backend fixture); raise ``ClauseFailure`` (an
    ``AssertionError``) on the case's clauses, with a message naming the case, the clause and
    the first mismatches."""
    __tracebackhide__ = True
    record = case.record
    clause = ",".join(case.clauses)
    call_text = f"{case.function}(golden case {case.name}: {record['description']})"
    if record["error"] is not None:
        error_type, facts = error_from_record(record["error"])
        assert_raises(
            error_type, facts, lambda: call(impl, case.function, case.inputs, record["options"]), clause=clause
        )
        return
    output, mutated = call(impl, case.function, case.inputs, record["options"])
    check(not mutated, f"inputs modified: {mutated} [{clause}: {call_text}]", clause=clause)
    if record["keys"] is not None:
        ordered = adapter(case.function).ordered_keys
        assert_keys(output, record["keys"], clause=clause, call=call_text, ordered=ordered)
    assert_equal(output, case.expected, clause=clause, call=call_text)
