"""bench/ runs: every workload once (``--benchmark-disable``) against the ``vectorized`` backend
and every comparator, at the smallest shape; and the native backend's own workloads (a sample,
where cargo can build it). Timings are not checked here (they belong to the benchmark's own
output); this proves the harness and its comparators work on a fresh machine."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from _suite import BackgroundRun, long_run
from test_native import CARGO, NO_CARGO, build_native
from test_suite_run import outcome

# the native backend's functions on the workloads of its targets (docs/benchmarks.md, "The native
# backend"): convert with the metadata bundle on both payloads, and the metadata functions on the
# pipeline rows and at 200 documents per row; the full run is the command in docs/benchmarks.md
NATIVE_SAMPLE = "(test_convert_text_batch and document_ids+metadata) or (test_backend and (pipeline or 200docs))"


class _NoCargo:
    """What the native smoke run gives where cargo is missing: nothing to read."""

    def result(self, timeout: float = 900) -> None:
        return None

    def stop(self) -> None:
        pass


def _start_native(folder: Path):
    if CARGO is None:
        return _NoCargo()
    env = build_native(folder)
    args = ("bench", "--backend=batchspec_native", "--benchmark-disable", "--bench-shapes=8x4096")
    return BackgroundRun(folder, *args, "-k", NATIVE_SAMPLE, env=env)


native_bench_smoke_run = long_run("native_bench_smoke_run", _start_native)


def test_every_workload_runs(bench_smoke_run):
    assert bench_smoke_run.returncode == 0, bench_smoke_run.output[-5000:]
    outcomes = Counter(outcome(t) for t in bench_smoke_run.testcases)
    assert outcomes["failed"] == 0 and outcomes["skipped"] == 0, outcomes
    modules = Counter(t.get("classname", "").rsplit(".", 1)[-1] for t in bench_smoke_run.testcases)
    # convert: 6 routes x 2 payloads, zephon x 2, ingest x 2, HF x 1, documents sweep x 5
    assert modules["test_convert"] == 6 * 2 + 2 + 2 + 1 + 5, modules
    # metadata: 2 functions x (pipeline + 5 sweep points) x (backend + upstream)
    assert modules["test_metadata"] == 2 * 6 * 2, modules
    assert modules["test_collate"] == 2 + 2 + 1 + 1 + 1, modules
    assert modules["test_loader"] == 1, modules


def test_the_native_backend_runs_its_sampled_workloads(native_bench_smoke_run):
    if native_bench_smoke_run is None:
        pytest.skip(NO_CARGO)
    run = native_bench_smoke_run
    assert run.returncode == 0, run.output[-5000:]
    outcomes = Counter(outcome(t) for t in run.testcases)
    assert outcomes["failed"] == 0 and outcomes["skipped"] == 0, outcomes
    names = sorted(t.get("name", "") for t in run.testcases)
    # convert x 2 payloads; 2 functions x (pipeline rows, 200 documents per row)
    assert len(names) == 6 and all("batchspec_native" in name for name in names), names
