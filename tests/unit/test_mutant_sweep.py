"""The mutant sweep's bookkeeping (``tests/mutants/sweep.py``), on the mutants' files and on
literal rows: every mutant declares clauses SPEC has, the daily sample rotates through all of
them, and the kill table counts blame precision. Running the mutants is the runs tier's
(``tests/runs/test_mutants.py``)."""

from __future__ import annotations

import datetime
import importlib.util
from pathlib import Path

from batchspec.conformance.spec import spec_clauses

SWEEP = Path(__file__).resolve().parents[1] / "mutants" / "sweep.py"
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


def test_a_mutant_without_its_breaks_line_is_refused(tmp_path):
    path = tmp_path / "m_x.py"
    path.write_text('"""Drops the shift: labels equal inputs."""\nBACKEND = None\n', encoding="utf-8")
    try:
        sweep.declared(path)
    except ValueError as error:
        assert "m_x.py" in str(error)
    else:
        raise AssertionError("a docstring without 'Breaks: [...]' was accepted")
    path.write_text('"""Drops the shift. Breaks: [ctb-shift], [tb-keys]"""\nBACKEND = None\n', encoding="utf-8")
    assert sweep.declared(path) == ("Drops the shift.", ("ctb-shift", "tb-keys"))


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
