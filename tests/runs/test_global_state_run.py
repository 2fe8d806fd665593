"""torch's process-wide settings around the backend (conformance/run/torch_state.py, SPEC.md
[global-state]): a backend that leaves one changed is blamed on [global-state] in the test whose
call changed it, the settings are set back, and later, unrelated tests pass as they would have.
Planted backends: ``tests/probe_backends/state_backends.py``."""

from __future__ import annotations

import os

import pytest
from _suite import ROOT, run_conformance

PROBES = os.pathsep.join(str(ROOT / "tests" / folder) for folder in ("probe_backends", "mutants"))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [PROBES, os.environ.get("PYTHONPATH")])))
GOLDENS = "conformance/test_goldens.py"


def golden_id(case: str) -> str:
    return f"{GOLDENS}::test_golden_case[{case}]"


def test_a_default_dtype_left_changed_is_blamed_where_it_was_changed_and_nowhere_else(tmp_path):
    """``adapt_model_inputs`` leaves the default dtype float16: its golden cases (collected
    before the ``Datum`` cases) are blamed on [global-state], a SHOULD clause; the ``Datum``
    cases that want float32 weights pass (they failed on [datum-construct] before the suite set
    the dtype back); the clauses the adapt cases check keep their pass."""
    run = run_conformance(
        tmp_path,
        GOLDENS,
        "conformance/test_global_state.py",
        "-k",
        "adapt or datum",
        "-p",
        "no:xdist",
        "--backend=state_backends:HALF_DEFAULT",
        env=ENV,
    )
    report = run.report
    statuses = {clause: row["status"] for clause, row in report["clauses"].items()}
    assert report["verdict"]["result"] == "pass" and run.returncode == 0, run.output[-3000:]
    assert statuses["datum-construct"] == "pass" and statuses["adapt-attention-ids"] == "pass", statuses
    assert statuses["global-state"] == "FAIL" and list(report["verdict"]["should_failures"]) == ["global-state"]
    failures = {f["nodeid"]: f for f in report["failures"]}
    changed = golden_id("test_adapt_copies_document_ids")
    record = failures[f"{changed}::[global-state]"]
    assert record["clauses"] == ["global-state"] and record["blame"] == ["clause check"]
    assert "default dtype: torch.float32 -> torch.float16 (in adapt_model_inputs)" in record["message"]
    assert record["reproduce"].endswith(f"'{changed}' --backend=state_backends:HALF_DEFAULT")
    assert all(f["clauses"] == ["global-state"] for f in failures.values()), sorted(failures)
    assert not [n for n in failures if "datum" in n], sorted(failures)
    # the check of its own calls each function with settings a user may well have (float64)
    own = failures[
        "conformance/test_global_state.py::test_a_call_leaves_torchs_settings_as_it_found_them[adapt_model_inputs]"
    ]
    assert "default dtype: torch.float64 -> torch.float16" in own["message"]


@pytest.mark.parametrize("workers", ["no:xdist", "1"])
def test_a_class_of_the_contract_that_changes_a_setting_is_seen_by_the_guard_around_its_test(tmp_path, workers):
    """``ZephonDataLoader`` (a class: its calls are not wrapped one by one) changes the number of
    threads on construction: the guard around the test's call phase sees it, in one process and
    under pytest-xdist (the record travels to the controller)."""
    test = "conformance/test_loader.py::test_construction_does_not_start_the_pipeline"
    distribution = ["-p", "no:xdist"] if workers == "no:xdist" else ["-n", workers]
    run = run_conformance(tmp_path, test, *distribution, "--backend=state_backends:LOADER_THREADS", env=ENV)
    records = {f["nodeid"]: f for f in run.report["failures"]}
    assert list(records) == [f"{test}::[global-state]"], run.output[-3000:]
    assert "number of threads: " in records[f"{test}::[global-state]"]["message"]
    assert "(during the test)" in records[f"{test}::[global-state]"]["message"]
    assert run.report["clauses"]["loader-construct-lazy"]["status"] == "pass"
    assert run.report["verdict"]["result"] == "pass" and run.returncode == 0
