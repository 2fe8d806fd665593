"""Launching one multi-rank job: ``launch`` runs a scenario phase (``scenarios.run_phase``) on K
rank processes under ``mpiexec`` or torch.distributed and returns what each rank wrote. The
rank processes are forked by a ``zygote.Zygote`` when one is given, else new interpreters
(``mpiexec -n K python -m batchspec.conformance.multirank.mpi_main``, ``python -m
batchspec.conformance.multirank.torch_main --ranks K``). ``conformance/test_checkpoint_ranks.py``
checks the results; ``tests/runs/test_zygote.py`` checks the processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from batchspec.conformance.helpers.asserts import SuiteError
from batchspec.conformance.multirank.zygote import wait_all

__all__ = ["JOB_TIMEOUT_S", "MPI4PY_MISSING", "MPIEXEC", "backend_dir", "launch", "rank_environment"]

JOB_TIMEOUT_S = 120

try:
    import mpi4py  # noqa: F401

    MPI4PY_MISSING = None
except ImportError as _error:
    MPI4PY_MISSING = f"mpi4py is not installed ({_error})"
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")


def backend_dir(backend_spec: str) -> str | None:
    """The directory that makes the backend's top-level module importable, as pytest found it."""
    top = backend_spec.partition(":")[0].split(".")[0]
    module = sys.modules.get(top)
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    return str(path.parent.parent if path.name == "__init__.py" else path.parent)


def rank_environment(backend_spec: str) -> dict:
    """The rank processes' environment: the caller's, with the caller's ``PYTHONPATH`` and then
    the directory pytest found the backend in (batchspec itself is an installed package)."""
    pythonpath = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), backend_dir(backend_spec)]))
    return dict(os.environ, PYTHONPATH=pythonpath)


def launch(launcher, backend_spec, ranks, workdir: Path, name: str, timeout=JOB_TIMEOUT_S, zygote=None, **params):
    """One job of ``ranks`` processes running ``scenarios.run_phase(params)`` under ``launcher``:
    rank processes forked by ``zygote`` (a ``zygote.Zygote``), or, when it is None, new
    interpreters (``mpiexec ... mpi_main``, ``torch_main --ranks``).

    Returns ``(returncode, per-rank results, wall seconds, output tail)``. A job that runs past
    ``timeout`` is killed (its whole process group, or its ranks) and fails the test.
    """
    out = workdir / name
    out.mkdir(parents=True)
    params = {"scratch_dir": str(workdir), "run_id": name, **params}
    env = {**rank_environment(backend_spec), "ZEPHON_CATALOG_DIR": str(workdir / "catalog")}
    job = ["--backend", backend_spec, "--out", str(out), "--params", json.dumps(params)]
    started = time.monotonic()
    if launcher == "torch" and zygote is not None:
        returncode, output = _run_forked_ranks(zygote, backend_spec, ranks, out, name, params, env, timeout)
    else:
        returncode, output = _run_rank_command(launcher, backend_spec, ranks, job, name, env, timeout, zygote)
    elapsed = time.monotonic() - started
    results = []
    for rank in range(ranks):
        path = out / f"rank{rank}.json"
        if not path.exists():
            hint = ""
            if "BackendError" in output:
                hint = (
                    f"\nthe rank processes could not load --backend {backend_spec!r} although pytest could; "
                    f"make its module importable from {Path.cwd()} with PYTHONPATH"
                )
            raise SuiteError(
                f"{launcher} job {name!r}: rank {rank} wrote no result (rc={returncode}){hint}\n{output[-4000:]}"
            )
        results.append(json.loads(path.read_text(encoding="utf-8")))
    return returncode, results, elapsed, output[-4000:]


def _run_forked_ranks(zygote, backend_spec, ranks, out: Path, name: str, params: dict, env: dict, timeout):
    """The torch launcher's ranks forked by ``zygote``: ``(returncode, output)``, their shared
    output in ``out/output.txt``; a job past ``timeout`` fails the test."""
    log = out / "output.txt"
    init_file = str(out / "gloo-rendezvous")
    with open(log, "wb") as sink, open(os.devnull, "rb") as null:
        conns = [
            zygote.start(
                "torch_rank",
                [json.dumps([rank, ranks, init_file, backend_spec, params, str(out)])],
                {0: null.fileno(), 1: sink.fileno(), 2: sink.fileno()},
                env,
            )
            for rank in range(ranks)
        ]
    try:
        codes = wait_all(conns, timeout)
    except TimeoutError as error:
        pytest.fail(
            f"torch job {name!r} ran past {timeout}s and was killed ({error}); output:\n{log.read_text(errors='replace')[-4000:]}"
        )
    returncode = 0 if not any(codes) else 1
    output = log.read_text(errors="replace")
    if returncode:
        output += f"\nranks exited non-zero (rank: exit code): { {r: c for r, c in enumerate(codes) if c} }"
    return returncode, output


def _run_rank_command(launcher, backend_spec, ranks, job: list[str], name: str, env: dict, timeout, zygote):
    """The ranks as new interpreters (``mpiexec ... mpi_main``, its ranks forked by ``zygote`` when
    given, or ``torch_main --ranks``): ``(returncode, output)``; a job past ``timeout`` has its
    process group killed and fails the test."""
    if launcher == "mpiexec":
        rank_command = ["-m", "batchspec.conformance.multirank.mpi_main"]
        if zygote is not None:
            rank_command = [
                "-m",
                "batchspec.conformance.multirank.zygote",
                "rank",
                str(zygote.socket_path()),
                "mpi_main",
            ]
        command: list[Any] = [MPIEXEC, "-n", str(ranks), sys.executable, *rank_command, *job]
    else:
        command = [sys.executable, "-m", "batchspec.conformance.multirank.torch_main", "--ranks", str(ranks), *job]
    # the rank processes start in the caller's directory, as pytest did
    process = subprocess.Popen(
        command,
        cwd=Path.cwd(),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        output, _ = process.communicate()
        pytest.fail(f"{launcher} job {name!r} ran past {timeout}s and was killed; output:\n{output[-4000:]}")
    return process.returncode, output
