"""Mutation testing (``tests/mutants/``): each mutant is the reference with one realistic bug and
declares the clauses it breaks; the suite must kill it and blame only those clauses. The sweep
is one command (``tests/mutants/sweep.py``); its daily sample joins CI once the suite's blame is
exact (issue 15: today most mutants are killed, but also blamed on clauses they do not break)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from batchspec.conformance.spec import spec_clauses

SWEEP = Path(__file__).resolve().parent / "mutants" / "sweep.py"
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
