"""The verdict's integrity rules (conformance/run/verdict.py, issue 31): a collection error is never a
pass, and a ``--release`` run is a pass only when its selection left nothing out."""

from __future__ import annotations

from batchspec.conformance.run.report import render_markdown
from batchspec.conformance.run.verdict import LEFT_OUT_SHOWN, build_report

HEADER = {
    "suite": {"version": "0", "spec_version": "1.0", "golden_index_sha256": "0" * 64},
    "backend": {"name": "b", "version": "1", "capabilities": [], "spec_version": "1.0", "device": "cpu"},
    "environment": {},
    "run": {},
}
LEVELS = {"c-must": "MUST"}
PASSED = [{"nodeid": "conformance/test_a.py::test_x", "cited": ["c-must"], "outcome": "passed", "blamed": []}]


def verdict_of(**options) -> dict:
    report = build_report(
        PASSED,
        levels=LEVELS,
        expectations=[],
        strict_expectations=False,
        header=HEADER,
        declared_clauses=["c-must"],
        **options,
    )
    return report


def test_every_must_clause_checked_and_nothing_left_out_passes():
    assert verdict_of(release=True)["verdict"]["result"] == "pass"


def test_a_collection_error_makes_the_run_incomplete_and_names_it():
    report = verdict_of(
        collection_errors=[{"nodeid": "conformance/test_goldens.py", "message": "GoldenError: golden/x: sha256"}]
    )
    verdict = report["verdict"]
    assert (verdict["result"], verdict["exit_status"]) == ("incomplete", 2)
    assert verdict["incomplete"] == ["not collected: conformance/test_goldens.py: GoldenError: golden/x: sha256"]
    assert "not collected: conformance/test_goldens.py" in render_markdown(report)


def test_a_release_run_with_tests_deselected_is_incomplete_and_names_them():
    left_out = [f"conformance/test_a.py::test_{i:02d}" for i in range(LEFT_OUT_SHOWN + 3)]
    report = verdict_of(release=True, left_out=left_out)
    verdict = report["verdict"]
    assert (verdict["result"], verdict["exit_status"]) == ("incomplete", 1)
    assert verdict["left_out"] == {"count": len(left_out), "tests": left_out}
    [reason] = verdict["incomplete"]
    assert f"{len(left_out)} were left out" in reason and left_out[0] in reason and "and 3 more" in reason
    assert left_out[-1] not in reason  # a bounded list


def test_a_release_run_limited_to_some_paths_is_incomplete():
    verdict = verdict_of(release=True, limited_to=["conformance/test_a.py"])["verdict"]
    assert verdict["result"] == "incomplete" and "limited to conformance/test_a.py" in verdict["incomplete"][0]


def test_outside_a_release_the_selection_is_shown_but_not_fatal():
    report = verdict_of(left_out=["conformance/test_a.py::test_y"], limited_to=["conformance/test_a.py"])
    assert report["verdict"]["result"] == "pass"
    markdown = render_markdown(report)
    assert "1 test(s) deselected (-k, -m, --deselect): conformance/test_a.py::test_y" in markdown
    assert "limited to: conformance/test_a.py" in markdown
