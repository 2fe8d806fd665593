"""[global-state] (SPEC.md, "Conformance", "Process-wide state"): a call of the contract leaves
torch's process-wide settings as it found them.

Every call of every test is watched (conformance/run/torch_state.py: the settings are set back after
each call and each test, and a change fails the test that made it). This check calls each
contract function and class on a valid stored input of its own with settings a user may well
have and a process rarely starts with (``unusual_settings``), so that a backend that sets one to
torch's default is seen too. Only the settings are judged here: outputs and errors are the
golden cases' to check.
"""

from __future__ import annotations

import pytest

from batchspec.conformance.golden.adapters import call
from batchspec.conformance.helpers.asserts import check
from batchspec.conformance.run.torch_state import CLAUSE, restore, snapshot, take_changes, unusual_settings
from batchspec.conformance.tools.goldens import load_all


def _first_cases() -> list:
    """The first stored case of each contract function or class that gives an output (no error)."""
    cases: dict[str, object] = {}
    for case in load_all():
        if case.record["error"] is None:
            cases.setdefault(case.function, case)
    return list(cases.values())


CASES = _first_cases()


@pytest.mark.clause("global-state")
@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.function, marks=pytest.mark.requires(*c.capabilities)) for c in CASES]
)
def test_a_call_leaves_torchs_settings_as_it_found_them(backend, case):
    with unusual_settings() as before:
        try:
            call(backend, case.function, case.inputs, case.record["options"])
        except Exception:  # only the settings are judged here (the golden case judges the rest)
            pass
        changes = [*take_changes(), *before.changes(snapshot())]
        restore(before)
    check(
        not changes,
        f"{case.function}(golden case {case.name}) changed torch's process-wide settings and left them so: "
        f"{'; '.join(changes)}",
        clause=CLAUSE,
    )
