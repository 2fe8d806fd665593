"""[state-body-valid] (SPEC 1.4): a re-signed envelope around a reshaped ``state`` is a
``malformed body`` at load. Planted loaders (``tests/probe_backends/state_backends.py``): one
that accepts any ``state`` (the 1.3 reference's) and one that raises ``TypeError`` fail
``conformance/test_checkpoint_body.py`` blamed on [state-body-valid] alone, a SHOULD clause (a
warning: the verdict stays pass). The reference passes it in the full runs
(``tests/runs/test_suite_run.py``), a reworded reference in ``tests/runs/test_fairness.py``."""

from __future__ import annotations

import os

from _suite import ROOT, BackgroundRun, long_run

from batchspec.conformance.test_checkpoint_body import MUTATION_CLASSES as RESHAPINGS

PROBES = os.pathsep.join(str(ROOT / "tests" / folder) for folder in ("probe_backends", "mutants"))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [PROBES, os.environ.get("PYTHONPATH")])))
CHECKS = "conformance/test_checkpoint_body.py"
MUTATION_CLASSES = len(RESHAPINGS)  # the parameters of test_a_reshaped_state_is_a_malformed_body_at_load


def _planted(name: str):
    return long_run(
        f"state_body_{name.lower()}_run",
        lambda folder: BackgroundRun(folder, CHECKS, "-p", "no:xdist", f"--backend=state_backends:{name}", env=ENV),
    )


state_body_late_body_check_run = _planted("LATE_BODY_CHECK")
state_body_body_type_error_run = _planted("BODY_TYPE_ERROR")


def _blamed_on_the_should_clause_alone(run) -> list[dict]:
    report = run.report
    failures = report["failures"]
    assert failures, run.output[-3000:]
    assert all(f["clauses"] == ["state-body-valid"] and f["blame"] == ["clause check"] for f in failures), failures
    assert report["clauses"]["state-body-valid"]["status"] == "FAIL"
    # the MUST clauses the check also cites are not blamed (inconclusive where the test failed)
    assert report["clauses"]["state-load-validates-first"]["status"] != "FAIL"
    assert report["clauses"]["state-exact-resume"]["status"] != "FAIL"
    assert list(report["verdict"]["should_failures"]) == ["state-body-valid"]
    assert report["verdict"]["result"] == "pass" and run.returncode == 0, run.output[-3000:]
    return failures


def test_a_loader_that_checks_only_the_envelope_fails_every_mutation_class(state_body_late_body_check_run):
    """It accepts at load a state of every class of reshaping (and Zephon fails on it, or
    resumes another stream, at the first ``next()``)."""
    failures = _blamed_on_the_should_clause_alone(state_body_late_body_check_run)
    assert len(failures) == MUTATION_CLASSES, [f["nodeid"] for f in failures]
    assert all("accepted at: []" not in f["message"] for f in failures), failures


def test_a_loader_that_refuses_with_a_type_error_fails(state_body_body_type_error_run):
    """The structure is checked at load, but a mismatch raises ``TypeError``, not the
    ``malformed body`` ``ValueError`` of [state-load-validates-first]."""
    failures = _blamed_on_the_should_clause_alone(state_body_body_type_error_run)
    assert len(failures) == MUTATION_CLASSES and all("TypeError" in f["message"] for f in failures), failures
