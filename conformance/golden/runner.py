"""Running a stored case (``batchspec.conformance.golden.store``) against the backend under test, with
the suite's own asserts (conformance/helpers/asserts.py)."""

from __future__ import annotations

from typing import Any

from batchspec.conformance.golden.adapters import adapter, call
from batchspec.conformance.golden.errors import error_from_record
from batchspec.conformance.golden.store import StoredCase
from batchspec.conformance.helpers.asserts import assert_equal, assert_keys, assert_raises, check
from batchspec.conformance.helpers.fields import assert_training_batch_equal, label_targets
from batchspec.conformance.helpers.inputs import Row
from batchspec.conformance.helpers.literals import IGNORE_INDEX

__all__ = ["run_stored_case"]


def _label_targets(case: StoredCase):
    """The label targets of a ``convert_text_batch`` case's rows, as the call pads them."""
    options = case.record["options"]
    rows = [Row(tuple(r["tokens"]), r.get("positions"), r.get("padding_length")) for r in case.inputs["rows"]]
    return label_targets(
        rows,
        options.get("ignore_index", IGNORE_INDEX),
        options.get("mask_segment_starts", False),
        options.get("pad_to_length"),
    )


def run_stored_case(impl: Any, case: StoredCase) -> None:
    """Run one stored case against ``impl`` (the backend fixture); raise ``ClauseFailure`` (an
    ``AssertionError``) with a message naming the case, the clause and the first mismatches.

    A ``convert_text_batch`` output is compared field by field and blamed on the clauses of
    the first field that differs (``conformance/helpers/fields.py``), its key set on
    [tb-keys]; a modified input on the case's no-mutation clause; anything else on the case's
    clauses."""
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
    no_mutation = [c for c in case.clauses if c.endswith("no-mutation")] or list(case.clauses)
    check(not mutated, f"inputs modified: {mutated} [{', '.join(no_mutation)}: {call_text}]", clause=no_mutation)
    batch = case.function == "convert_text_batch"
    if record["keys"] is not None:
        ordered = adapter(case.function).ordered_keys
        assert_keys(output, record["keys"], clause="tb-keys" if batch else clause, call=call_text, ordered=ordered)
    if batch:
        options = record["options"]
        conditions = {"xdoc"} if options.get("xdoc") else set()
        conditions |= {"unpacked"} if options.get("pad_to_length") is not None else set()
        assert_training_batch_equal(
            output,
            case.expected,
            clause=clause,
            call=call_text,
            targets=_label_targets(case),
            partial=True,
            conditions=conditions,
        )
    else:
        assert_equal(output, case.expected, clause=clause, call=call_text)
