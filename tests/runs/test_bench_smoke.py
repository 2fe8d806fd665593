"""bench/ runs: every workload once (``--benchmark-disable``) against the ``vectorized`` backend
and every comparator, at the smallest shape. Timings are not checked here (they belong to the
benchmark's own output); this proves the harness and its comparators work on a fresh machine."""

from __future__ import annotations

from collections import Counter

from test_suite_run import outcome


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
