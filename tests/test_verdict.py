"""The release gate (README, "Gating a release"): the verdict and its exit status, expectations,
deterministic release runs, and crash and hang isolation, each shown with a backend of
``tests/probe_backends/verdict_backends.py`` on a small selection of the suite."""

from __future__ import annotations

import json
import os
import runpy
import shlex
import textwrap

from _suite import ROOT, run_conformance

from batchspec.conformance import scoreboard
from batchspec.conformance.goldens import load_all
from batchspec.conformance.spec import spec_clauses

PROBES = str(ROOT / "tests" / "probe_backends")
MUTANTS = str(ROOT / "tests" / "mutants")  # mutant_base, which the probes are built with
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [PROBES, MUTANTS, os.environ.get("PYTHONPATH")])))
GOLDENS = "conformance/test_goldens.py"


def golden_id(case: str) -> str:
    return f"{GOLDENS}::test_golden_case[{case}]"


def test_a_planted_must_bug_fails_the_verdict_and_the_report_names_its_clause(tmp_path):
    run = run_conformance(tmp_path, GOLDENS, "-k", "unpad_generated_0", "--backend=verdict_backends:PLANTED", env=ENV)
    verdict = run.report["verdict"]
    assert run.returncode == 1 and verdict["result"] == "fail" and verdict["exit_status"] == 1
    # max_seqlen is [unpad-outputs]'s alone: the cases' route clauses are not blamed
    assert list(verdict["must_failures"]) == ["unpad-outputs"]
    assert verdict["must_failures"]["unpad-outputs"] == [golden_id(f"test_unpad_generated_0{i}") for i in range(10)]
    failure = run.report["failures"][0]
    assert "max_seqlen" in failure["message"] and "unpad-outputs" in failure["clauses"]
    assert failure["reproduce"].endswith(f"pytest {shlex.quote(failure['nodeid'])} --backend=verdict_backends:PLANTED")
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "**Verdict: FAIL** (exit status 1)" in markdown and "- [unpad-outputs]:" in markdown
    assert "batchspec verdict: FAIL (exit status 1): 1 MUST clause(s) fail" in run.output


def test_should_failures_are_warnings_and_never_a_non_zero_exit(tmp_path):
    run = run_conformance(
        tmp_path,
        "conformance/test_contract_types.py",
        "-k",
        "revalidated",
        "--backend=verdict_backends:SHOULD_ONLY",
        env=ENV,
    )
    verdict = run.report["verdict"]
    assert [t.find("failure") is not None for t in run.testcases] == [True, True], "both xdoc variants fail"
    assert run.returncode == 0 and verdict["result"] == "pass" and verdict["must_failures"] == {}
    assert list(verdict["should_failures"]) == ["contract-no-revalidation"]
    assert "1 SHOULD clause(s) fail (warnings)" in run.output


def test_expectations_report_expected_failures_unexpected_passes_and_stale_entries(tmp_path):
    expectations = tmp_path / "expectations.toml"
    expectations.write_text(
        textwrap.dedent(
            f"""
            [[expected]]
            test = "{golden_id("test_unpad_generated_0*")}"
            category = "backend bug"
            reason = "max_seqlen off by one (tracked as #7)"

            [[expected]]
            test = "{golden_id("test_unpad_rejects_1d")}"
            category = "not implemented"
            reason = "was missing, since fixed"

            [[expected]]
            test = "conformance/test_removed_long_ago.py::*"
            category = "suite bug reported"
            reason = "an entry nobody deleted"
            """
        ),
        encoding="utf-8",
    )
    args = (GOLDENS, "-k", "unpad_generated_0 or unpad_rejects_1d", "--backend=verdict_backends:PLANTED")
    run = run_conformance(tmp_path / "lenient", *args, f"--expectations={expectations}", env=ENV)
    verdict = run.report["verdict"]
    assert run.returncode == 0 and verdict["result"] == "pass", run.output[-3000:]
    assert [e["nodeid"] for e in verdict["expected_failures"]] == [
        golden_id(f"test_unpad_generated_0{i}") for i in range(10)
    ]
    assert {e["entry"] for e in verdict["expected_failures"]} == {0}
    assert verdict["unexpected_passes"] == [{"nodeid": golden_id("test_unpad_rejects_1d"), "entry": 1}]
    assert [e["entry"] for e in verdict["stale_expectations"]] == [2]
    assert run.report["clauses"]["unpad-outputs"]["status"] == "expected failure"
    assert "10 expected failure(s); 1 unexpected pass(es); 1 stale expectation(s)" in run.output

    strict = run_conformance(
        tmp_path / "strict", *args, f"--expectations={expectations}", "--strict-expectations", env=ENV
    )
    assert strict.returncode == 1 and strict.report["verdict"]["result"] == "fail"


def test_an_interrupted_run_is_incomplete_never_a_pass(tmp_path):
    run = run_conformance(tmp_path, GOLDENS, "-k", "unpad", "--backend=verdict_backends:INTERRUPTING", env=ENV)
    verdict = run.report["verdict"]
    assert run.returncode == 2 and verdict["result"] == "incomplete" and verdict["exit_status"] == 2
    assert verdict["incomplete"] and verdict["incomplete"][0].startswith("the run stopped early")
    assert "**Verdict: INCOMPLETE** (exit status 2)" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")


def test_a_release_run_of_a_subset_is_incomplete(tmp_path):
    subset = run_conformance(tmp_path / "subset", "conformance/test_signatures.py", "--backend=reference", "--release")
    verdict = subset.report["verdict"]
    assert subset.returncode == 1 and verdict["result"] == "incomplete"
    assert (
        "ctb-shift" in verdict["unchecked_must_clauses"] and "api-signatures" not in verdict["unchecked_must_clauses"]
    )
    # the same subset outside a release run passes, and still lists what it did not check
    dev = run_conformance(tmp_path / "dev", "conformance/test_signatures.py", "--backend=reference")
    assert dev.returncode == 0 and dev.report["verdict"]["result"] == "pass"
    assert dev.report["verdict"]["unchecked_must_clauses"] == verdict["unchecked_must_clauses"]


def test_an_unwritable_report_folder_and_a_second_backend_are_usage_errors(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    run = run_conformance(tmp_path / "r", GOLDENS, "--backend=reference", f"--conformance-report={blocker}", "--co")
    assert run.returncode == 4 and f"--conformance-report={blocker}: cannot create the folder" in run.output
    run = run_conformance(tmp_path / "b", GOLDENS, "--backend=vectorized", "--backend=reference", "--co")
    assert run.returncode == 4 and "--backend was given 2 times (vectorized, reference)" in run.output


def test_an_unreadable_expectations_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "expectations.toml"
    bad.write_text(
        '[[expected]]\nclause = "no-such-clause"\ncategory = "backend bug"\nreason = "x"\n', encoding="utf-8"
    )
    run = run_conformance(tmp_path, GOLDENS, "--backend=reference", f"--expectations={bad}", "--co", env=ENV)
    assert run.returncode == 4 and "clause 'no-such-clause' is not a clause of SPEC.md" in run.output


def test_two_release_runs_give_the_same_verdict_bytes(tmp_path):
    args = (
        "conformance/properties/test_invariants.py",
        "-k",
        "unpad",
        "--backend=verdict_backends:PLANTED",
        "--release",
    )
    first, second = (run_conformance(tmp_path / name, *args, env=ENV) for name in ("first", "second"))
    assert first.report["verdict"]["must_failures"], "the planted bug must be found"
    assert json.dumps(first.report["verdict"]) == json.dumps(second.report["verdict"])
    assert first.report["run"]["release"] is True
    assert "derandomize=True, database=none" in first.report["run"]["hypothesis settings"]


def test_a_crash_and_a_hang_fail_only_their_own_tests_and_the_report_is_complete(tmp_path, monkeypatch):
    """``os.abort()`` on one golden case's mask, an endless sleep on another's: with pytest-xdist
    (a crashed worker is replaced) and pytest-timeout (its thread method kills a hung worker),
    exactly the tests that call the backend on those masks fail, blamed on their clauses."""
    monkeypatch.syspath_prepend(MUTANTS)
    probes = runpy.run_path(f"{PROBES}/verdict_backends.py")
    abort_case, hang_case = probes["ABORT_CASE"], probes["HANG_CASE"]
    cases = [c for c in load_all() if c.function == "get_unpad_data"]
    masks = {name: next(c for c in cases if c.name == name).inputs["mask"] for name in (abort_case, hang_case)}

    def hits(case) -> bool:
        mask = case.inputs["mask"]
        return any(m.dtype == mask.dtype and m.shape == mask.shape and bool((m == mask).all()) for m in masks.values())

    run = run_conformance(
        tmp_path,
        GOLDENS,
        "-k",
        "unpad",
        "--backend=verdict_backends:FRAGILE",
        "-n",
        "1",
        "--timeout=8",
        "-o",
        "timeout_method=thread",
        env=ENV,
    )
    records = {t["nodeid"]: t["outcome"] for row in run.report["clauses"].values() for t in row["tests"]}
    assert sorted(records) == sorted(golden_id(c.name) for c in cases), "every test of the run is in the report"
    failed = sorted(f["nodeid"] for f in run.report["failures"])
    assert failed == sorted(golden_id(c.name) for c in cases if hits(c)), run.output[-3000:]
    assert run.returncode == 1 and run.report["verdict"]["result"] == "fail"
    for failure in run.report["failures"]:
        assert "process died" in failure["message"] and failure["clauses"], failure


def test_the_scoreboard_puts_reference_and_vectorized_side_by_side(reference_run, vectorized_run, tmp_path):
    paths = []
    for name, run in (("reference", reference_run), ("vectorized", vectorized_run)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(run.report), encoding="utf-8")
    out = tmp_path / "scoreboard.md"
    assert scoreboard.main([*map(str, paths), "--out", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert "| clause | level | reference 0.1.0 | vectorized 0.1.0 |" in lines
    assert "| **verdict** | | **pass** | **pass** |" in lines
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ")}
    for clause, row in reference_run.report["clauses"].items():
        other = vectorized_run.report["clauses"].get(clause, {}).get("status", "not run")
        assert rows[clause] == f"| {clause} | {row['level']} | {row['status']} | {other} |"


def test_the_committed_scoreboard_has_a_row_for_every_spec_clause():
    """``docs/scoreboard.md`` (README, "Gating a release") cannot silently miss a clause SPEC adds."""
    text = (ROOT / "docs" / "scoreboard.md").read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].removeprefix("| ") for line in text.splitlines() if line.startswith("| ")}
    assert set(spec_clauses()) <= rows, sorted(set(spec_clauses()) - rows)
