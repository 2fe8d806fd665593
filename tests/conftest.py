"""Fixtures of the project's own tests (every tier: unit/, runs/, upstream/): the stored golden
cases and a private copy of golden/ to tamper with; and the long runs (the whole conformance suite against the
reference, and against the ``vectorized`` and ``automodel`` backends; bench/'s smoke run), each
run once per session.

Both start in background processes as soon as collection shows a test that needs them, so they
run on the second core while the other tests run; a fixture waits for its run only when a test
reads it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _suite import BackgroundRun, SuiteRun

from batchspec.conformance import goldens
from batchspec.conformance.golden.store import load_all

# fixture name -> the conformance run's arguments. The vectorized run leaves out the multi-rank
# scenarios: its ZephonDataLoader is the reference's (whose run covers them), and they are most
# of a run's time. The full command is in README ("The vectorized backend").
RUNS = {
    "reference_run": ("conformance", "--backend=reference"),
    "vectorized_run": ("conformance", "--backend=vectorized", "--ignore=conformance/test_checkpoint_ranks.py"),
    # upstream nemo-automodel 0.7.0's own functions (README, "Upstream through the suite")
    "automodel_run": (
        "conformance",
        "--backend=automodel",
        "--release",
        "-q",
        "--ignore=conformance/test_checkpoint_ranks.py",
    ),
    # bench/'s smoke run: every workload once, untimed, at the smallest shape (docs/benchmarks.md)
    "bench_smoke_run": ("bench", "--backend=vectorized", "--benchmark-disable", "--bench-shapes=8x4096"),
}
_started: dict[str, BackgroundRun] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ()) if name in RUNS}
    for name in sorted(needed):
        tmp_dir = session.config._tmp_path_factory.mktemp(name)
        _started[name] = BackgroundRun(tmp_dir, *RUNS[name])


def pytest_sessionfinish(session: pytest.Session) -> None:
    for run in _started.values():
        run.stop()


def _run(name: str, tmp_path_factory) -> SuiteRun:
    if name not in _started:  # e.g. requested by a test selected after collection
        _started[name] = BackgroundRun(tmp_path_factory.mktemp(name), *RUNS[name])
    return _started[name].result()


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory) -> SuiteRun:
    """The whole conformance suite against the reference backend."""
    return _run("reference_run", tmp_path_factory)


@pytest.fixture(scope="session")
def vectorized_run(tmp_path_factory) -> SuiteRun:
    """The conformance suite against the vectorized backend (multi-rank scenarios left out)."""
    return _run("vectorized_run", tmp_path_factory)


@pytest.fixture(scope="session")
def automodel_run(tmp_path_factory) -> SuiteRun:
    """The conformance suite against upstream nemo-automodel 0.7.0 (``automodel``; multi-rank
    scenarios left out: their profile is not declared)."""
    return _run("automodel_run", tmp_path_factory)


@pytest.fixture(scope="session")
def bench_smoke_run(tmp_path_factory) -> SuiteRun:
    """``pytest bench`` with every workload run once, untimed (``--benchmark-disable``)."""
    return _run("bench_smoke_run", tmp_path_factory)


@pytest.fixture(scope="session")
def golden_cases() -> list:
    """The stored golden cases whose reference run returns (no error case)."""
    return [c for c in load_all() if c.record["error"] is None]


@pytest.fixture()
def golden_copy(tmp_path) -> Path:
    """A private copy of golden/ (index and data) to tamper with."""
    root = tmp_path / "golden"
    shutil.copytree(goldens.ROOT / "data", root / "data")
    shutil.copy2(goldens.ROOT / "index.json", root / "index.json")
    return root
