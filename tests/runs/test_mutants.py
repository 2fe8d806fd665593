"""Mutation testing (``tests/mutants/``): each mutant is the reference with one realistic bug and
declares the clauses it breaks; the suite must kill it and blame only those clauses. The full
sweep is one command (``tests/mutants/sweep.py -j 2``, docs/mutation-testing.md); CI runs a
slice of it that changes every day (``--sample``), so the whole set is swept every few days.
The sweep's bookkeeping (declarations, the daily slice, the kill table) is checked in the unit
tier (``tests/unit/test_mutant_sweep.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

from _suite import BackgroundCommand, long_run

SWEEP = Path(__file__).resolve().parents[1] / "mutants" / "sweep.py"
# mutants a CI run sweeps (one after another, beside the other long runs: ~30-60 s each)
DAILY_SAMPLE = 3


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
