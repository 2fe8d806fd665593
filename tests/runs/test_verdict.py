"""The release gate (README, "Gating a release"): the verdict and its exit status, expectations,
deterministic release runs, crash and hang isolation, and a report on every outcome (a refused
backend, a usage error, Ctrl-C and SIGTERM under pytest-xdist), each shown with a backend of
``tests/probe_backends/verdict_backends.py`` (or the reference) on a small selection of the
suite."""

from __future__ import annotations

import json
import os
import runpy
import shlex
import signal
import textwrap
import time
from pathlib import Path

import pytest
from _suite import ROOT, BackgroundRun, run_conformance

from batchspec.conformance.helpers.asserts import MODEL_EXTRA, MULTIRANK_EXTRA
from batchspec.conformance.multirank.launchers import parse_launchers
from batchspec.conformance.run.backends import BackendError, load_backend
from batchspec.conformance.run.expectations import ExpectationsError, load_expectations
from batchspec.conformance.run.recorder import CTRL_C
from batchspec.conformance.run.report import (
    MARKDOWN_FAILURES,
    REPORT_JSON,
    REPORT_MD,
    RESULTS_LOG,
    dumps,
    suite_version,
)
from batchspec.conformance.run.spec import spec_clauses, spec_profiles, spec_version
from batchspec.conformance.run.verdict import build_report
from batchspec.conformance.tools import scoreboard
from batchspec.conformance.tools.goldens import load_all

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


def test_each_failure_says_how_it_was_blamed_and_the_valid_input_note_only_where_it_holds(tmp_path):
    """report.json's ``blame`` per failure; the note "on an input with none of the faults" only on
    an exception raised where the test expects an output, never on the wrong exception type of
    an error check whose input has the fault (``blame_backends:WRONG_ERRORS``)."""
    faulty, valid = "test_unpad_rejects_1d", "test_unpad_generated_00"
    run = run_conformance(
        tmp_path, GOLDENS, "-k", f"{faulty} or {valid}", "--backend=blame_backends:WRONG_ERRORS", env=ENV
    )
    failures = {f["nodeid"]: f for f in run.report["failures"]}
    assert sorted(failures) == [golden_id(valid), golden_id(faulty)], run.output[-3000:]
    wrong_type, raised = failures[golden_id(faulty)], failures[golden_id(valid)]
    assert wrong_type["clauses"] == ["unpad-errors"] and wrong_type["blame"] == ["clause check"]
    assert "RuntimeError" in wrong_type["message"] and "none of the faults" not in wrong_type["message"]
    assert raised["clauses"] == ["unpad-errors"] and raised["blame"] == ["raised on a valid input"]
    assert "IndexError" in raised["message"] and "none of the faults [unpad-errors]" in raised["message"]
    markdown = (tmp_path / "report" / REPORT_MD).read_text(encoding="utf-8")
    assert "(failed; unpad-errors; blamed by: raised on a valid input)" in markdown


def test_should_failures_are_warnings_and_never_a_non_zero_exit(tmp_path):
    run = run_conformance(
        tmp_path,
        "conformance/test_contract.py",
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
    subset = run_conformance(
        tmp_path / "subset", "conformance/test_contract_signatures.py", "--backend=reference", "--release"
    )
    verdict = subset.report["verdict"]
    assert subset.returncode == 1 and verdict["result"] == "incomplete"
    assert (
        "ctb-shift" in verdict["unchecked_must_clauses"] and "api-signatures" not in verdict["unchecked_must_clauses"]
    )
    # the same subset outside a release run passes, and still lists what it did not check
    dev = run_conformance(tmp_path / "dev", "conformance/test_contract_signatures.py", "--backend=reference")
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
        "conformance/properties/test_metadata_invariants.py",
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


def test_a_refused_backend_still_gets_a_report_that_says_why(tmp_path, monkeypatch):
    """A backend without ``BATCHSPEC_SPEC_VERSION`` is refused before any test runs: pytest's
    usage error, and a report with verdict ``error``, the refusal, and what is known."""
    (tmp_path / "unversioned.py").write_text("from batchspec.reference import get_unpad_data  # noqa: F401\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(BackendError) as refusal:
        load_backend("unversioned")
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(tmp_path), ENV["PYTHONPATH"]]))
    run = run_conformance(tmp_path / "run", "conformance/test_contract_signatures.py", "--backend=unversioned", env=env)
    verdict = run.report["verdict"]
    assert run.returncode == pytest.ExitCode.USAGE_ERROR and not run.testcases, run.output[-2000:]
    assert verdict["result"] == "error" and verdict["exit_status"] == run.returncode
    assert verdict["errors"] == [str(refusal.value)] and "BATCHSPEC_SPEC_VERSION" in verdict["errors"][0]
    assert str(refusal.value) in run.output
    assert run.report["suite"]["version"] == suite_version() and run.report["suite"]["spec_version"] == spec_version()
    backend = run.report["backend"]
    assert backend["name"] == "unversioned" and backend["loaded"] is False and backend["version"] == "unknown"
    assert run.report["clauses"] == {} and run.report["failures"] == []
    markdown = (tmp_path / "run" / "report" / REPORT_MD).read_text(encoding="utf-8")
    assert "**Verdict: ERROR** (exit status 4)" in markdown and "unversioned: not loaded" in markdown
    assert str(refusal.value) in markdown


@pytest.mark.parametrize("name", ["GENERATOR", "NUMBER"])
def test_a_malformed_capability_declaration_is_refused_with_a_report(tmp_path, monkeypatch, name):
    """``BATCHSPEC_CAPABILITIES`` as a generator (read by validation, it left the run no profile:
    a pass with 0 tests) or as ``42`` (an internal error, no report): refused like any backend,
    exit status 4 and a report with verdict ``error`` naming the declaration."""
    backend = f"capability_backends:{name}"
    for folder in (MUTANTS, PROBES):
        monkeypatch.syspath_prepend(folder)
    with pytest.raises(BackendError) as refusal:
        load_backend(backend)
    run = run_conformance(tmp_path, "conformance/test_contract_signatures.py", f"--backend={backend}", env=ENV)
    verdict = run.report.get("verdict", {})
    assert run.returncode == pytest.ExitCode.USAGE_ERROR and not run.testcases, run.output[-2000:]
    assert verdict["result"] == "error" and verdict["errors"] == [str(refusal.value)]
    assert "BATCHSPEC_CAPABILITIES" in verdict["errors"][0] and run.report["backend"]["loaded"] is False


def test_usage_errors_get_a_report_that_says_why(tmp_path):
    """A bad ``--launcher``, two ``--backend``s, a bad ``--expectations`` file, a test id that
    does not exist, and a selection of no test: each a report with verdict ``error``, the
    reason, and pytest's exit status."""
    bad = tmp_path / "expectations.toml"
    bad.write_text('[[expected]]\nclause = "no-such-clause"\ncategory = "backend bug"\nreason = "x"\n')
    with pytest.raises(pytest.UsageError) as launcher:
        parse_launchers("foo")
    with pytest.raises(ExpectationsError) as expectations:
        load_expectations(str(bad), spec_clauses())
    signatures = "conformance/test_contract_signatures.py"
    cases = {
        "launcher": ((signatures, "--backend=reference", "--launcher=foo"), str(launcher.value)),
        "expectations": ((signatures, "--backend=reference", f"--expectations={bad}"), str(expectations.value)),
        "backends": ((signatures, "--backend=vectorized", "--backend=reference"), "--backend was given 2 times"),
        "test id": ((f"{signatures}::test_no_such_test", "--backend=reference"), "not found: "),
    }
    for name, (args, reason) in cases.items():
        run = run_conformance(tmp_path / name.replace(" ", "-"), *args)
        verdict = run.report.get("verdict", {})
        assert run.returncode == pytest.ExitCode.USAGE_ERROR, (name, run.output[-2000:])
        assert verdict["result"] == "error" and verdict["exit_status"] == run.returncode, name
        assert len(verdict["errors"]) == 1 and verdict["errors"][0].startswith(reason), (name, verdict["errors"])
        assert verdict["errors"][0].splitlines()[0] in run.output, name
    none = run_conformance(tmp_path / "none", signatures, "-k", "no_test_has_this_name", "--backend=reference")
    assert none.returncode == pytest.ExitCode.NO_TESTS_COLLECTED
    assert none.report["verdict"]["result"] == "error" and none.report["verdict"]["exit_status"] == none.returncode
    assert none.report["verdict"]["errors"][0].startswith("no test was selected")


def _results_log(directory: Path) -> dict[str, dict]:
    """``results.jsonl``: test id -> its record (the last line of a test id is its result)."""
    lines = (directory / RESULTS_LOG).read_text(encoding="utf-8").splitlines()
    return {record["nodeid"]: record for record in map(json.loads, lines)}


def _report_from_log(directory: Path, report: dict, *, interrupted: str | None) -> dict:
    """The report built again from ``results.jsonl`` alone, with ``report``'s header: the
    report is exactly what the log's results give."""
    profiles = spec_profiles()
    return build_report(
        list(_results_log(directory).values()),
        levels=spec_clauses(),
        expectations=[],
        strict_expectations=False,
        header={key: report[key] for key in ("suite", "backend", "environment", "run")},
        declared_clauses={c for p in report["backend"]["capabilities"] for c in profiles.get(p, ())},
        interrupted=interrupted,
        # what the run's selection left out is the run's, not a test's: it is not in the log
        left_out=report["verdict"]["left_out"]["tests"],
        limited_to=report["verdict"]["limited_to"],
        never_ran=report["verdict"]["never_ran"]["tests"],
    )


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (pytest-xdist's workers of a controller), from /proc."""
    return [int(stat.parent.name) for stat in Path("/proc").glob("[0-9]*/stat") if _alive(stat, parent=pid)]


def _alive(stat: Path, parent: int | None = None) -> bool:
    """Whether the process of ``/proc/PID/stat`` runs (is not a zombie), with ``parent`` as its
    parent when given."""
    try:
        state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
    except OSError:  # it ended meanwhile
        return False
    return state != "Z" and (parent is None or int(ppid) == parent)


# README "Gating a release": an interrupted run ends at once (workers get SIGINT, are killed a
# second later; under 5 s on 2 idle cores), report written. The bound tells "stopped" from
# "waited for the queued property tests" (minutes at BATCHSPEC_MAX_EXAMPLES=100000) with room
# for a 2-core CI machine shared with other jobs: it is not a timing figure (those go in bench/).
STOPS_WITHIN_S = 20


@pytest.mark.parametrize(
    ("signum", "workers_option", "reason"),
    [(signal.SIGINT, "2", CTRL_C), (signal.SIGTERM, "1", signal.SIGTERM.name)],
    ids=["SIGINT", "SIGTERM"],
)
def test_an_interrupted_distributed_run_stops_at_once_with_a_report_of_the_results_so_far(
    tmp_path, signum, workers_option, reason
):
    """Ctrl-C (SIGINT) or SIGTERM sent to pytest-xdist's controller mid-run: the workers are
    stopped, the run ends within ``STOPS_WITHIN_S`` seconds with exit status 2, and the report
    says ``incomplete``, with exactly the results ``results.jsonl`` had logged."""
    # quick tests first, then property tests that would run for long (many examples each)
    tests = ("conformance/test_contract_signatures.py", "conformance/properties")
    env = dict(os.environ, BATCHSPEC_MAX_EXAMPLES="100000")
    run = BackgroundRun(tmp_path, *tests, "--backend=reference", "-n", workers_option, env=env)
    directory = tmp_path / "report"
    try:
        deadline, logged = time.monotonic() + 300, set()
        while len(logged) < 3:
            assert time.monotonic() < deadline and run.running, "the run logged no results"
            time.sleep(0.2)
            if (directory / RESULTS_LOG).exists():  # the whole lines written so far
                lines = (directory / RESULTS_LOG).read_text(encoding="utf-8").splitlines(keepends=True)
                logged = {json.loads(line)["nodeid"] for line in lines if line.endswith("\n")}
        workers = _children(run.pid)
        run.send_signal(signum)
        sent = time.monotonic()
        done = run.result(timeout=60)
        took = time.monotonic() - sent
    finally:
        run.stop()
    assert took < STOPS_WITHIN_S, f"the run took {took:.1f} s to stop"
    assert len(workers) == int(workers_option), workers
    assert not [pid for pid in workers if _alive(Path(f"/proc/{pid}/stat"))], "a worker outlived the run"
    verdict = done.report["verdict"]
    assert done.returncode == 2 and verdict["result"] == "incomplete", done.output[-3000:]
    assert verdict["incomplete"][0] == f"the run stopped early ({reason})"
    # the tests that had not run are named (the long property tests were still queued)
    assert verdict["never_ran"]["count"] > 0 and len(verdict["incomplete"]) == 2
    assert verdict["incomplete"][1].startswith(f"{verdict['never_ran']['count']} test(s) never ran or never finished: ")
    tested = {t["nodeid"] for row in done.report["clauses"].values() for t in row["tests"]}
    assert logged <= tested == set(_results_log(directory)), "a result logged before the signal is missing"
    assert dumps(_report_from_log(directory, done.report, interrupted=reason)) == (directory / REPORT_JSON).read_text()


def test_report_md_reads_header_verdict_failures_clauses_then_what_no_test_checked(tmp_path):
    """A run with more failures than report.md shows in full (a mutant whose labels are not
    shifted fails [ctb-shift] on most golden cases): the sections in reading order, the first
    ``MARKDOWN_FAILURES`` failures in full and a count of the rest, and the report equal to
    what ``results.jsonl`` gives."""
    run = run_conformance(tmp_path, GOLDENS, "--backend=m_labels_unshifted:BACKEND", env=ENV)
    directory = tmp_path / "report"
    failures = run.report["failures"]
    assert run.returncode == 1 and len(failures) > MARKDOWN_FAILURES, run.output[-3000:]
    markdown = (directory / REPORT_MD).read_text(encoding="utf-8")
    order = [
        "| suite | batchspec",
        "**Verdict: FAIL** (exit status 1)",
        "## MUST clauses that fail (the verdict)",
        "## Failures",
        "## Clauses",
        "## MUST clauses of the declared profiles that no test checked",
        "## Clauses with no test in this run",
    ]
    positions = [markdown.index(text) for text in order]
    assert positions == sorted(positions), [text for _, text in sorted(zip(positions, order))]
    shown = [line.split("`")[1] for line in markdown.splitlines() if line.startswith("### `")]
    assert shown == [f["nodeid"] for f in failures[:MARKDOWN_FAILURES]]
    assert f"{len(failures) - MARKDOWN_FAILURES} more failures: see report.json" in markdown
    assert dumps(_report_from_log(directory, run.report, interrupted=None)) == (directory / REPORT_JSON).read_text()


def test_a_run_without_mpi4py_or_transformers_names_each_skip_with_its_fix(tmp_path):
    """mpi4py and transformers made unimportable: the mpiexec scenarios and the model checks are
    skipped, report.json names each reason with the extra that fixes it, and the verdict of a
    run whose clauses the torch launcher still checked passes (README, "Gating a release")."""
    hidden = tmp_path / "hidden"
    for package in ("mpi4py", "transformers"):
        (hidden / package).mkdir(parents=True)
        (hidden / package / "__init__.py").write_text(f"raise ImportError('{package} hidden by the test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), os.environ.get("PYTHONPATH", "")])}
    run = run_conformance(
        tmp_path / "run",
        "conformance/test_checkpoint_ranks.py",
        "conformance/model/test_model_equivalence.py",
        "--backend=reference",
        "-k",
        "missing_tp_peer or test_model_equivalence",
        env=env,
    )
    verdict = run.report["verdict"]
    assert verdict["result"] == "pass", run.output[-3000:]
    by_reason = {g["reason"]: g for g in verdict["skips"]}
    mpi = next(g for reason, g in by_reason.items() if "mpi4py hidden by the test" in reason)
    assert mpi["fix"] == MULTIRANK_EXTRA and mpi["tests"] == [
        "conformance/test_checkpoint_ranks.py::test_missing_tp_peer_fails_within_bound[mpiexec]"
    ]
    model = next(g for reason, g in by_reason.items() if "transformers hidden by the test" in reason)
    assert model["fix"] == MODEL_EXTRA and model["count"] >= 10
    assert all(n.startswith("conformance/model/test_model_equivalence.py::") for n in model["tests"])
    markdown = (tmp_path / "run" / "report" / REPORT_MD).read_text()
    assert f"fix: `{MULTIRANK_EXTRA}`" in markdown and f"fix: `{MODEL_EXTRA}`" in markdown
