"""``pytest bench --backend=A [--backend=B ...] [--device=cuda] [--bench-shapes=8x4096,...]``.

Options: ``--backend`` (repeatable) and ``--device`` are the conformance suite's own
(``conformance/run/options.py``); ``--bench-shapes`` restricts the ``convert_text_batch`` shapes.
Every benchmark records, in pytest-benchmark's ``extra_info``, the schema ``bench/report.py``
reads: ``workload``, ``family``, ``implementation``, ``kind``, ``tokens`` (or ``items``),
``shape``, ``route``, ``payload``, ``documents_per_row``, ``ops``, ``bytes_materialised``,
``floor_bytes``, ``mask_bytes``, ``peak_memory_bytes``. The machine's copy bandwidth (the floor)
is measured once per run and stored in ``machine_info["batchspec"]``.

Smoke run (CI): ``--benchmark-disable`` runs every workload once, untimed.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from typing import Any

import pytest
import torch

from batchspec.bench.counting import counted
from batchspec.bench.workloads import BACKENDS, DEVICE, SELECTED_SHAPES
from batchspec.conformance.run.backends import BackendError, load_backend
from batchspec.conformance.run.device import DeviceOptionError, check_device_option
from batchspec.conformance.run.options import add_backend_option, add_device_option

# The reference's per-token Python loops take minutes beyond this many tokens per call; its
# benchmarks stop there (the report leaves its ratio blank on larger shapes).
REFERENCE_MAX_TOKENS = 8 * 8192
# A call slower than this is timed in a few rounds without pytest-benchmark's calibration.
SLOW_CALL_S = 0.5
COPY_BYTES = 64 * 2**20  # each side of the bandwidth copy: beyond the last-level cache


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("batchspec-bench")
    add_backend_option(group, repeatable=True)
    add_device_option(group)
    group.addoption(
        "--bench-shapes",
        default=None,
        help="comma-separated BxS shapes of the convert_text_batch workloads, e.g. 8x4096,64x32768 "
        "(default: bench/workloads.SHAPES)",
    )


def pytest_configure(config: pytest.Config) -> None:
    names = config.getoption("--backend") or []
    if not names:
        raise pytest.UsageError("pytest bench needs at least one --backend (repeat it to compare backends)")
    try:
        config.stash[DEVICE] = check_device_option(config.getoption("--device"))
        config.stash[BACKENDS] = {name: load_backend(name) for name in dict.fromkeys(names)}
    except (BackendError, DeviceOptionError) as error:
        raise pytest.UsageError(str(error)) from None
    shapes = config.getoption("--bench-shapes")
    try:
        config.stash[SELECTED_SHAPES] = (
            None if shapes is None else [tuple(map(int, s.split("x"))) for s in shapes.split(",")]
        )
    except ValueError:
        raise pytest.UsageError(
            f"--bench-shapes={shapes!r}: expected comma-separated BxS, e.g. 8x4096,64x32768"
        ) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        backends = metafunc.config.stash[BACKENDS]
        metafunc.parametrize("backend_name", list(backends))


def copy_bandwidth(device: str) -> float:
    """Bytes per second ``dst.copy_(src)`` moves (read + write) between two preallocated int64
    tensors of ``COPY_BYTES`` on ``device``: the best of 50 (about half a second on a CPU), so a
    moment of contention from another process does not lower the floor of the whole run."""
    src = torch.ones(COPY_BYTES // 8, dtype=torch.int64, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(51):
        synchronize(device)
        start = time.perf_counter()
        dst.copy_(src)
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return 2 * COPY_BYTES / best


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    device = config.stash[DEVICE]
    machine_info["batchspec"] = {
        "copy_bandwidth_bytes_per_s": copy_bandwidth(device),
        "device": device if device == "cpu" else f"{device} ({torch.cuda.get_device_name(device)})",
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "backends": {name: backend.version for name, backend in config.stash[BACKENDS].items()},
        "command": " ".join(["pytest", *config.invocation_params.args]),
    }


@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest) -> str:
    return request.config.stash[DEVICE]


@pytest.fixture
def backend(request: pytest.FixtureRequest, backend_name: str):
    return request.config.stash[BACKENDS][backend_name]


@pytest.fixture
def run(benchmark, device: str, request: pytest.FixtureRequest):
    """``run(call, implementation=..., kind=..., workload=..., family=..., **extra)``: count the
    call's torch operators and bytes once, then time it with pytest-benchmark (calibrated; a
    call slower than ``SLOW_CALL_S`` is timed in up to 3 plain rounds), and record the
    ``extra_info`` schema. Returns the call's result."""

    def measure(call: Callable[[], Any], *, implementation: str, kind: str, **extra: Any) -> Any:
        def synchronized() -> Any:
            out = call()
            synchronize(device)
            return out

        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        counter = counted(synchronized)
        once = time.perf_counter() - start
        info = {"implementation": implementation, "kind": kind, "device": device, **extra}
        info["ops"] = counter.operators if counter.operators else None
        info["bytes_materialised"] = counter.bytes_materialised if counter.operators else None
        if device.startswith("cuda"):
            info["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
        benchmark.extra_info.update(info)
        benchmark.group = extra.get("workload")
        if benchmark.disabled or once < SLOW_CALL_S:
            return benchmark(synchronized)
        return benchmark.pedantic(synchronized, rounds=max(1, min(3, int(10 / once))), iterations=1)

    return measure


def skip_unless_reference_fits(backend_name: str, tokens: int) -> None:
    """The reference's loops are per token: skip it beyond ``REFERENCE_MAX_TOKENS`` per call."""
    if backend_name == "reference" and tokens > REFERENCE_MAX_TOKENS:
        pytest.skip(f"reference: {tokens} tokens per call is beyond its {REFERENCE_MAX_TOKENS} (per-token loops)")
