"""The ``vectorized`` backend is certified by the suite: the whole conformance run (the loader's
modules aside: its loader is the reference's, ``LOADER_ONLY`` in
tests/conftest.py) passes with no failure and no capability reported as not supported."""

from __future__ import annotations

from test_suite_run import outcome

from batchspec.conformance.run.backends import CAPABILITIES


def test_vectorized_passes_the_suite_with_every_capability(vectorized_run):
    assert vectorized_run.returncode == 0, vectorized_run.output[-5000:]
    outcomes = [outcome(t) for t in vectorized_run.testcases]
    assert outcomes.count("failed") == 0
    assert outcomes.count("skipped") == 0, "vectorized declares every capability; nothing may be 'not supported'"
    assert outcomes.count("passed") >= 800, f"only {outcomes.count('passed')} conformance tests passed"
    assert "batchspec conformance: backend=vectorized version=0.1.0" in vectorized_run.output


def test_vectorized_is_judged_on_every_profile(vectorized_run):
    report = vectorized_run.report
    assert report["backend"]["name"] == "vectorized"
    assert sorted(report["backend"]["capabilities"]) == sorted(CAPABILITIES)
    failing = {clause: entry["status"] for clause, entry in report["clauses"].items() if entry["status"] != "pass"}
    assert failing == {}
