"""Fixtures of the project's own tests: one run of the conformance suite against the
reference, shared by every test that inspects its outcome."""

from __future__ import annotations

import pytest
from _suite import SuiteRun, run_conformance


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory) -> SuiteRun:
    """The whole conformance suite against the reference backend, run once per session."""
    return run_conformance(tmp_path_factory.mktemp("reference-run"), "conformance", "--backend=reference")
