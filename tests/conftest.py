"""Fixtures of the project's own tests (every tier: unit/, runs/, upstream/): the stored golden
cases and a private copy of golden/ to tamper with; and the long runs (the whole conformance suite against the
reference, and against the ``vectorized`` and ``automodel`` backends; bench/'s smoke run), each
run once per session.

They start in background processes as soon as collection shows a test that needs them
(``_suite.long_run``; test modules declare their own long runs the same way), so they use both
cores while the other tests run; the tests that read them run last (``long_runs_last``), and a
fixture waits for its run only when a test reads it.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from _suite import BackgroundRun, long_run, long_runs_last, start_long_runs, stop_long_runs

from batchspec.conformance.golden.verified_read import load_all
from batchspec.conformance.tools import goldens

# A shell without job control starts a background job (``bash .ci/run &``) with SIGINT ignored,
# and every process the job starts inherits that: the runs tier's Ctrl-C test would send SIGINT to a
# run that ignores it. The project's tests run as from a terminal, where Python handles SIGINT (a
# run with SIGINT ignored is one test's own case: tests/runs/test_run_integrity.py)
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# the modules whose tests exercise ZephonDataLoader: the state body, fingerprint and validation
# checks (``requires("zephon_loader", "zephon_state")`` and nothing else) and the multi-rank
# scenarios (some also call the backend's convert_text_batch, which the rest of a run checks)
LOADER_ONLY = tuple(
    f"--ignore=conformance/{name}.py"
    for name in (
        "test_checkpoint_ranks",
        "test_checkpoint_body",
        "test_checkpoint_fingerprint",
        "test_checkpoint_validation",
    )
)

# fixture name -> the conformance run's arguments. The vectorized run leaves out the loader's modules
# (LOADER_ONLY): vectorized's ZephonDataLoader is the reference's (whose run covers
# them), and they take about 40% of a full run. The full command is in README ("The vectorized backend").
RUNS = {
    "reference_run": ("conformance", "--backend=reference"),
    "vectorized_run": ("conformance", "--backend=vectorized", *LOADER_ONLY),
    # upstream nemo-automodel 0.7.0's own functions (docs/upstream.md, "Upstream through the suite")
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


# fixture name -> environment variables of the run, each set to a file of the run's folder: the
# vectorized run counts which code path each call took (backends/vectorized/paths.py), read by
# tests/runs/test_vectorized_paths.py
RUN_FILES = {"vectorized_run": {"BATCHSPEC_VECTORIZED_PATHS": "paths.jsonl"}}


def _start(name: str, folder: Path) -> BackgroundRun:
    files = {key: str(folder / file) for key, file in RUN_FILES.get(name, {}).items()}
    return BackgroundRun(folder, *RUNS[name], env={**os.environ, **files} if files else None)


def _suite_run(name: str):
    return long_run(name, lambda folder: _start(name, folder))


# the triton backend under Triton's interpreter (issue 33), sampled to the get_unpad_data tests and
# the golden cases (every route of convert_text_batch, rows past one 1024-column block: about
# 20 s; the full run: `TRITON_INTERPRET=1 batchspec --backend=triton --release`, CONTRIBUTING);
# started only by tests/runs/test_triton.py, which skips where triton is not installed
TRITON_SAMPLE = (
    "conformance",
    "--backend=triton",
    "-k",
    "unpad or test_golden_case",
    "--ignore=conformance/test_checkpoint_ranks.py",
)
triton_run = long_run(
    "triton_run", lambda folder: BackgroundRun(folder, *TRITON_SAMPLE, env={**os.environ, "TRITON_INTERPRET": "1"})
)
# the whole conformance suite against the reference backend
reference_run = _suite_run("reference_run")
# the conformance suite against the vectorized backend (multi-rank scenarios left out)
vectorized_run = _suite_run("vectorized_run")
# against upstream nemo-automodel 0.7.0 (``automodel``; multi-rank scenarios left out: their
# profile is not declared)
automodel_run = _suite_run("automodel_run")
# ``pytest bench`` with every workload run once, untimed (``--benchmark-disable``)
bench_smoke_run = _suite_run("bench_smoke_run")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    long_runs_last(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    start_long_runs(session)


def pytest_sessionfinish(session: pytest.Session) -> None:
    stop_long_runs()


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
