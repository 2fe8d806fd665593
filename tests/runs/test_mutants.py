"""Mutation testing (``tests/mutants/``): each mutant is the reference with one realistic bug and
declares the clauses it breaks; the suite must kill it and blame only those clauses. The full
sweep is one command (``tests/mutants/sweep.py -j 2``, docs/mutation-testing.md); CI runs a
slice of it that changes every day (``--sample``), so the whole set is swept every few days."""

from __future__ import annotations

import datetime
import importlib.util
import sys
from pathlib import Path

from _suite import BackgroundCommand, long_run

from batchspec.conformance.spec import spec_clauses

SWEEP = Path(__file__).resolve().parents[1] / "mutants" / "sweep.py"
ROOT = SWEEP.parents[2]
# mutants a CI run sweeps (one after another, beside the other long runs: ~30-60 s each)
DAILY_SAMPLE = 3
_spec = importlib.util.spec_from_file_location("mutant_sweep", SWEEP)
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)


def test_every_mutant_declares_the_spec_clauses_it_breaks_and_exposes_a_backend():
    known = spec_clauses()
    assert sweep.mutants(), "no mutant in tests/mutants/"
    for name, path in sweep.mutants().items():
        summary, clauses = sweep.declared(path)
        assert summary, f"{name}: the docstring must say what the bug is"
        assert set(clauses) <= set(known), f"{name}: declares unknown clauses {sorted(set(clauses) - set(known))}"
        assert "\nBACKEND = " in path.read_text(encoding="utf-8"), f"{name}: no BACKEND"


def test_the_daily_sample_is_a_rotating_slice_of_every_mutant():
    names = list(sweep.mutants())
    days = [datetime.date(2026, 12, 1) + datetime.timedelta(days=k) for k in range(len(names))]
    slices = [sweep.sample(names, DAILY_SAMPLE, day) for day in days]
    assert all(len(s) == DAILY_SAMPLE and len(set(s)) == DAILY_SAMPLE for s in slices)
    assert slices[0] != slices[1], "the slice changes from day to day"
    assert {name for s in slices for name in s} == set(names), "every mutant is swept within len(names) days"


# CI's slice of the sweep, started at collection beside the other long runs (tests/conftest.py)
mutant_sample = long_run(
    "mutant_sample",
    lambda folder: BackgroundCommand(
        folder,
        [sys.executable, str(SWEEP), "--sample", str(DAILY_SAMPLE), "-j", "1", "--out", str(folder / "kill-table.md")],
    ),
)


def test_the_daily_sample_of_mutants_is_killed_with_only_its_declared_clauses_blamed(mutant_sample):
    """CI's slice of the sweep: each sampled mutant is killed and every clause its failures are
    blamed on is one it declares (the kill table is printed; ``--sample`` picks by the date)."""
    print(mutant_sample.output)
    assert mutant_sample.returncode == 0, f"the daily sample failed the sweep:\n{mutant_sample.output[-5000:]}"
    table = mutant_sample.folder / "kill-table.md"
    assert table.read_text(encoding="utf-8").count("| yes |") == DAILY_SAMPLE


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
