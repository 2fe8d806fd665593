"""Running a stored case (``batchspec.conformance.golden.verified_read``) against the backend under test, with
the suite's own asserts (conformance/helpers/asserts.py)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from typing import Any

from batchspec.conformance.golden.adapters import adapter, call
from batchspec.conformance.golden.errors import error_from_record
from batchspec.conformance.golden.key_blame import KEY_SET_CLAUSES, blame, default_collater_blame, error_clauses
from batchspec.conformance.golden.verified_read import StoredCase
from batchspec.conformance.helpers.asserts import ClauseFailure, assert_equal, assert_keys, assert_raises, check
from batchspec.conformance.helpers.fields import assert_training_batch_equal, label_targets
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.pipelines import check_canonical_fingerprint, check_exact_resume
from batchspec.conformance.helpers.sample_batches import Row

__all__ = ["run_stored_case"]


def _label_targets(rows_spec, options):
    """The label targets of ``convert_text_batch`` rows (a case's stored rows), as the call pads them."""
    rows = [Row(tuple(r["tokens"]), r.get("positions"), r.get("padding_length")) for r in rows_spec]
    return label_targets(
        rows,
        options.get("ignore_index", IGNORE_INDEX),
        options.get("mask_segment_starts", False),
        options.get("pad_to_length"),
    )


def _conditions(options) -> set[str]:
    """The conditional clauses of SPEC's field table that apply to a call with ``options``."""
    conditions = {"xdoc"} if options.get("xdoc") else set()
    return conditions | ({"unpacked"} if options.get("pad_to_length") is not None else set())


def _assert_output_equal(case: StoredCase, output: Any, clause: str, call_text: str) -> None:
    """A mapping output key by key, each key blamed on its own clauses (``blame``); any other
    output on the case's clauses."""
    __tracebackhide__ = True
    expected = case.expected
    if not (isinstance(expected, Mapping) and isinstance(output, Mapping)):
        assert_equal(output, expected, clause=clause, call=call_text)
        return
    key_set = ",".join(KEY_SET_CLAUSES.get(case.function, case.clauses))
    for key, want in expected.items():
        if key not in output:
            assert_equal(output, {key: want}, clause=key_set, call=call_text)  # raises, naming the key
        got = output[key]
        if case.function == "default_collater" and key != "padding_mask":
            blamed = default_collater_blame(key, got, want, case.inputs["batch"])
        else:
            blamed = blame(case.function, key, got, want, case.clauses, case.inputs)
        assert_equal(got, want, clause=",".join(blamed), call=call_text, path=key)


def _assert_loader_output(case: StoredCase, output: Any, clause: str, call_text: str) -> None:
    """A loader scenario: what the loader did with the stream first, the outcome kinds on the
    case's clauses and each pipeline counter on its own clauses (``blame``); then each converted
    batch field by field, blamed on the field's clauses (``assert_training_batch_equal``), with
    the label targets of the stream's batch it converts."""
    __tracebackhide__ = True
    expected = case.expected
    if not (isinstance(output, Mapping) and isinstance(expected, Mapping)):
        assert_equal(output, expected, clause=clause, call=call_text)
        return

    def shape_of(outcome: Any) -> Any:
        return "batch" if isinstance(outcome, Mapping) and "input_ids" in outcome else outcome

    wanted_outcomes = expected.get("outcomes", [])
    got_outcomes = output.get("outcomes")
    if not isinstance(got_outcomes, (list, tuple)):
        assert_equal(output, expected, clause=clause, call=call_text)
        return
    assert_equal(
        [shape_of(o) for o in got_outcomes],
        [shape_of(o) for o in wanted_outcomes],
        clause=clause,
        call=call_text,
        path="outcomes (each converted batch shown as 'batch')",
    )
    for key, want in expected.items():
        if key != "outcomes":
            blamed = blame(case.function, key, output.get(key), want, case.clauses)
            assert_equal(output, {key: want}, clause=",".join(blamed), call=call_text)
    options = case.record["options"]
    converted = 0
    for step, (got, want) in enumerate(zip(got_outcomes or [], wanted_outcomes)):
        if shape_of(want) != "batch":
            assert_equal(got, want, clause=clause, call=call_text, path=f"outcomes[{step}]")
            continue
        assert_training_batch_equal(
            got,
            want,
            clause=clause,
            call=f"{call_text}, batch {converted} (outcome {step})",
            targets=_label_targets(case.inputs["batches"][converted], options),
            partial=True,  # a scenario stores the fields it pins
            conditions=_conditions(options),
        )
        converted += 1


def _reads_state_after_start(script) -> bool:
    """Whether a checkpoint-state script reads, saves or loads a state after iterating: what it
    then sees depends on a plain save-and-resume being right."""
    verbs = [action.partition(":")[0] for action in script]
    started = [i for i, verb in enumerate(verbs) if verb in ("next", "rest")]
    return bool(started) and any(verb in ("state", "save", "same", "load") for verb in verbs[started[0] :])


# id(backend) -> the failure of its canonical-fingerprint check, or None: the check runs once per backend
_FINGERPRINT_CHECKED: dict[int, ClauseFailure | None] = {}


def _check_fingerprint_once(impl: Any, failure: BaseException) -> None:
    """``check_canonical_fingerprint`` for ``impl`` (run once per backend) after a state case
    failed with ``failure``: when the fingerprint is off, raise that check's failure (from
    ``failure``), so the case is blamed on [state-fingerprint-canonical]; else return."""
    __tracebackhide__ = True
    key = id(impl)
    if key not in _FINGERPRINT_CHECKED:
        try:
            with tempfile.TemporaryDirectory(prefix="batchspec-fingerprint-") as scratch:
                check_canonical_fingerprint(impl, scratch)
        except ClauseFailure as fingerprint_failure:
            _FINGERPRINT_CHECKED[key] = fingerprint_failure
        else:
            _FINGERPRINT_CHECKED[key] = None
    found = _FINGERPRINT_CHECKED[key]
    if found is not None:
        raise ClauseFailure(
            f"{found}\n(the golden case failed with: {type(failure).__name__}: {failure})", found.clauses
        ) from failure


def run_stored_case(impl: Any, case: StoredCase) -> None:
    """Run one stored case against ``impl`` (the backend fixture); raise ``ClauseFailure`` (an
    ``AssertionError``) with a message naming the case, the clause and the first mismatches.

    A ``convert_text_batch`` output, and each batch a loader scenario converts, is compared
    field by field and blamed on the clauses of the first field that differs
    (``conformance/helpers/fields.py``), its key set on [tb-keys]; any other mapping output key
    by key, blamed on that key's clauses (``conformance/golden/key_blame.py``); a modified input on
    the function's no-mutation clause; anything else on the case's clauses. A checkpoint-state
    case that fails is checked for the canonical fingerprint (``check_canonical_fingerprint``,
    once per backend): the cases store whole envelopes, so a fingerprint computed another way is
    blamed on [state-fingerprint-canonical], not on the clauses of the case; a script that reads a
    state after iterating then checks a plain save-and-resume (``check_exact_resume``), so that
    a loader whose resume is off is blamed on [state-after-start] and [state-exact-resume]."""
    __tracebackhide__ = True
    if case.function != "ZephonDataLoader.state":
        _run_case(impl, case)
        return
    try:
        _run_case(impl, case)
    except Exception as failure:  # a wrong fingerprint is blamed on its own clause first
        _check_fingerprint_once(impl, failure)
        raise


def _run_case(impl: Any, case: StoredCase) -> None:
    __tracebackhide__ = True
    record = case.record
    clause = ",".join(case.clauses)
    call_text = f"{case.function}(golden case {case.name}: {record['description']})"
    if record["error"] is not None:
        error_type, facts = error_from_record(record["error"])
        assert_raises(
            error_type,
            facts,
            lambda: call(impl, case.function, case.inputs, record["options"]),
            clause=",".join(error_clauses(case.clauses)),
        )
        return
    if case.function == "ZephonDataLoader.state" and _reads_state_after_start(record["options"]["script"]):
        with tempfile.TemporaryDirectory(prefix="batchspec-resume-") as scratch:
            check_exact_resume(impl, scratch)  # a plain resume that is off is its own clauses' failure
    output, mutated = call(impl, case.function, case.inputs, record["options"])
    spec = adapter(case.function)
    no_mutation = list(spec.no_mutation) or [c for c in case.clauses if c.endswith("no-mutation")] or list(case.clauses)
    check(not mutated, f"inputs modified: {mutated}", clause=no_mutation, call=call_text)
    batch = case.function == "convert_text_batch"
    if record["keys"] is not None:
        key_set = "tb-keys" if batch else ",".join(KEY_SET_CLAUSES.get(case.function, case.clauses))
        assert_keys(output, record["keys"], clause=key_set, call=call_text, ordered=spec.ordered_keys)
    options = record["options"]
    if batch:
        assert_training_batch_equal(
            output,
            case.expected,
            clause=clause,
            call=call_text,
            targets=_label_targets(case.inputs["rows"], options),
            partial=True,
            conditions=_conditions(options),
        )
    elif case.function == "ZephonDataLoader":
        _assert_loader_output(case, output, clause, call_text)
    else:
        _assert_output_equal(case, output, clause, call_text)
