"""[state-body-valid] (SPEC 1.4): a re-signed envelope around a reshaped ``state`` is a
``malformed body`` at load. Planted loaders (``tests/probe_backends/state_backends.py``): one
that accepts any ``state`` (the 1.3 reference's) and one that raises ``TypeError`` fail
``conformance/test_checkpoint_body.py`` blamed on [state-body-valid] alone, a SHOULD clause (a
warning: the verdict stays pass); the reference and the reworded reference pass it."""

from __future__ import annotations

import os

import pytest
from _suite import ROOT, run_conformance

PROBES = os.pathsep.join(str(ROOT / "tests" / folder) for folder in ("probe_backends", "mutants"))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [PROBES, os.environ.get("PYTHONPATH")])))
CHECKS = "conformance/test_checkpoint_body.py"


@pytest.mark.parametrize("planted", ["LATE_BODY_CHECK", "BODY_TYPE_ERROR"])
def test_a_loader_that_misjudges_a_reshaped_body_fails_on_state_body_valid(tmp_path, planted):
    run = run_conformance(tmp_path, CHECKS, "-p", "no:xdist", f"--backend=state_backends:{planted}", env=ENV)
    report = run.report
    failures = report["failures"]
    assert failures, run.output[-3000:]
    assert all(f["clauses"] == ["state-body-valid"] and f["blame"] == ["clause check"] for f in failures), failures
    assert report["clauses"]["state-body-valid"]["status"] == "FAIL"
    # the MUST clauses the checks also cite are not blamed (inconclusive where the test failed)
    assert report["clauses"]["state-load-validates-first"]["status"] != "FAIL"
    assert report["clauses"]["state-exact-resume"]["status"] != "FAIL"
    assert list(report["verdict"]["should_failures"]) == ["state-body-valid"]
    assert report["verdict"]["result"] == "pass" and run.returncode == 0, run.output[-3000:]
    # the late loader accepts at load every class of reshaped state
    if planted == "LATE_BODY_CHECK":
        assert len(failures) == 17 and all("accepted at: []" not in f["message"] for f in failures), failures
    else:
        assert any("TypeError" in f["message"] for f in failures), failures


@pytest.mark.parametrize("backend", ["reference", "reworded_backend"])
def test_the_reference_and_a_reworded_one_pass(tmp_path, backend):
    run = run_conformance(tmp_path, CHECKS, "-p", "no:xdist", f"--backend={backend}", env=ENV)
    assert run.report["failures"] == [], run.output[-3000:]
    assert run.report["clauses"]["state-body-valid"]["status"] == "pass"
    assert run.report["verdict"]["result"] == "pass" and run.returncode == 0
