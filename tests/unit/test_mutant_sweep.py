"""The mutant sweep's bookkeeping (``tests/mutants/sweep.py``), on the mutants' files and on
literal rows: every mutant declares clauses SPEC has, the daily sample rotates through all of
them, and the kill table counts blame precision. Running the mutants is the runs tier's
(``tests/runs/test_mutants.py``)."""

from __future__ import annotations

import datetime
import importlib.util
import re
from pathlib import Path

import pytest

from batchspec.conformance.run.spec import spec_clauses

SWEEP = Path(__file__).resolve().parents[1] / "mutants" / "sweep.py"
_spec = importlib.util.spec_from_file_location("mutant_sweep", SWEEP)
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)


def test_every_mutant_declares_the_spec_clauses_it_breaks_and_exposes_a_backend():
    known = spec_clauses()
    assert sweep.mutants(), "no mutant in tests/mutants/"
    for name, path in {**sweep.mutants(), **sweep.kernel_mutants()}.items():
        summary, clauses = sweep.declared(path)
        assert summary, f"{name}: the docstring must say what the bug is"
        assert set(clauses) <= set(known), f"{name}: declares unknown clauses {sorted(set(clauses) - set(known))}"
        assert "\nBACKEND = " in path.read_text(encoding="utf-8"), f"{name}: no BACKEND"


def test_a_mutant_without_its_breaks_line_is_refused(tmp_path):
    path = tmp_path / "m_x.py"
    path.write_text('"""Drops the shift: labels equal inputs."""\nBACKEND = None\n', encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape("m_x.py")):  # a docstring without 'Breaks: [...]'
        sweep.declared(path)
    path.write_text('"""Drops the shift. Breaks: [ctb-shift], [tb-keys]"""\nBACKEND = None\n', encoding="utf-8")
    assert sweep.declared(path) == ("Drops the shift.", ("ctb-shift", "tb-keys"))


def test_a_clause_list_may_go_on_over_the_first_paragraph_but_no_further(tmp_path):
    path = tmp_path / "mt_x.py"
    path.write_text(
        '"""Drops the shift. Breaks: [ctb-shift],\n[tb-keys], [tb-shapes]\n\nWhy [tb-layout] is not.\n"""\n',
        encoding="utf-8",
    )
    assert sweep.declared(path) == ("Drops the shift.", ("ctb-shift", "tb-keys", "tb-shapes"))
    path.write_text('"""Drops the shift.\n\nBreaks: [ctb-shift]\n"""\n', encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape("mt_x.py")):  # a Breaks list after the first paragraph
        sweep.declared(path)


def test_the_daily_sample_is_a_rotating_slice_of_every_mutant():
    names, count = list(sweep.mutants()), 3
    days = [datetime.date(2026, 12, 1) + datetime.timedelta(days=k) for k in range(len(names))]
    slices = [sweep.sample(names, count, day) for day in days]
    assert all(len(s) == count and len(set(s)) == count for s in slices)
    assert slices[0] != slices[1], "the slice changes from day to day"
    assert {name for s in slices for name in s} == set(names), "every mutant is swept within len(names) days"


def test_the_kill_table_reports_blame_precision_per_kill():
    """A kill (a failing test) is precise when its blamed set lies within the mutant's declared
    clauses; the table gives the count per mutant and the share over all kills."""
    rows = [
        {"mutant": "m_a", "summary": "a", "declared": ("ctb-shift",), "killed": True, "failed_tests": 4,
         "precise_kills": 3, "blamed": ["ctb-shift", "tb-keys"], "wrong_blame": ["tb-keys"]},
        {"mutant": "m_b", "summary": "b", "declared": ("tb-layout",), "killed": True, "failed_tests": 1,
         "precise_kills": 1, "blamed": ["tb-layout"], "wrong_blame": []},
    ]  # fmt: skip
    table = sweep.kill_table(rows)
    assert "| 3/4 |" in table and "| 1/1 |" in table
    assert "1/2 killed with every blamed clause declared; blame precision 4/5 kills (80%" in table
    assert [sweep.ok(row) for row in rows] == [False, True]


def test_a_run_without_a_verdict_is_not_a_kill_and_its_table_row_says_why():
    """A mutant whose run ended without a report (a segfault in-process, mt_unpad_tail_mask_le
    before the sweep ran its tests in a pytest-xdist worker) or was refused is NO with the reason
    in the killed cell, never a silent NO; a kill by a crash is counted as one."""
    rows = [
        {"mutant": "mt_a", "summary": "a", "declared": ("unpad-binary",), "killed": False,
         "error": "the run ended with exit status -11 and no report: ....FF | Fatal Python error"},
        {"mutant": "mt_b", "summary": "b", "declared": ("unpad-binary",), "killed": True, "failed_tests": 2,
         "crashed_tests": 1, "precise_kills": 1, "blamed": ["unpad-binary"], "wrong_blame": []},
        {"mutant": "mt_c", "summary": "c", "declared": ("unpad-binary",), "killed": True, "failed_tests": 1,
         "crashed_tests": 1, "precise_kills": 0, "blamed": [], "wrong_blame": []},
    ]  # fmt: skip
    table = sweep.kill_table(rows)
    assert "| NO: the run ended with exit status -11 and no report: ....FF \\| Fatal Python error |" in table
    assert "| yes (1 by a crash) | 2 | 1/1 |" in table and "| yes (1 by a crash) | 1 | 0/0 |" in table
    assert (
        "blame precision 1/1 kills (100%: blamed set within the mutant's declared clauses; 2 kills by a crash" in table
    )
    # a crash's kill has no blame to judge: killed only by crashes is not killed with the right blame
    assert [sweep.ok(row) for row in rows] == [False, True, False]


def test_a_crash_is_left_out_of_the_blame(monkeypatch, tmp_path):
    """A failure whose process died (blamed on every clause its test cites) is a kill, counted in
    crashed_tests, and its clauses are not the row's blame."""
    import json
    import subprocess

    def ran(command, **kwargs):
        report = Path(next(a for a in command if a.startswith("--conformance-report=")).split("=", 1)[1])
        report.mkdir(parents=True)
        failures = [
            {"nodeid": "conformance/x.py::test_a", "clauses": ["unpad-binary"], "message": "cu_seqlens differ"},
            {"nodeid": "conformance/x.py::test_b", "clauses": ["unpad-binary", "tb-layout"],
             "message": "the test's process died: a crash: worker 'gw0' crashed"},
        ]  # fmt: skip
        verdict = {"result": "fail", "suite_errors": []}
        (report / "report.json").write_text(json.dumps({"verdict": verdict, "failures": failures}))
        return subprocess.CompletedProcess(command, 1, stdout="", stderr="")

    monkeypatch.setattr(sweep.subprocess, "run", ran)
    row = sweep.run_mutant("mt_unpad_tail_mask_le", tmp_path)
    assert row["killed"] and row["failed_tests"] == 2 and row["crashed_tests"] == 1, row
    assert row["blamed"] == ["unpad-binary"] and row["wrong_blame"] == [] and row["precise_kills"] == 1, row


def test_the_sweep_runs_the_suite_in_a_worker_and_reports_a_run_that_died(monkeypatch, tmp_path):
    """The suite runs in one pytest-xdist worker with --dist=loadgroup, as ``batchspec`` runs it
    (conformance/run/scheduling.py keeps a crash to its own test); a run that still dies without a
    report is a row with the exit status and the output's tail, not a kill."""
    import subprocess

    seen = []

    def died(command, **kwargs):
        seen.append(command)
        return subprocess.CompletedProcess(
            command, -11, stdout="....FF", stderr="Fatal Python error: Segmentation fault"
        )

    monkeypatch.setattr(sweep.subprocess, "run", died)
    row = sweep.run_mutant("mt_unpad_tail_mask_le", tmp_path)
    command = seen[0]
    assert command[command.index("-n") + 1] == "1" and command[command.index("--dist") + 1] == "loadgroup"
    assert row["killed"] is False
    assert row["error"].startswith("the run ended with exit status -11 and no report"), row
    assert "Segmentation fault" in row["error"]
