"""Run one multi-rank scenario phase under ``torch.distributed`` (gloo), for users without MPI.

    python -m batchspec.conformance.multirank.torch_main --ranks K --backend NAME --out DIR \
        --params '{"take": 1, "save": true, ...}'

Spawns K processes (``multiprocessing``, start method ``spawn``); each joins a gloo
process group rendezvousing through a file in DIR (no network port) and runs
``scenarios.rank_main``, exactly as under ``mpiexec`` (``mpi_main``): the scenario code is
shared, only the collective helper differs. The job exits 0 when every rank succeeded, 1
otherwise (each rank exits with the job's status, after the others finished).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

# Longer than any scenario phase; the pytest side kills a job that runs past its own limit.
GLOO_TIMEOUT = timedelta(seconds=300)


class TorchGroup:
    """``scenarios.Group`` over the default ``torch.distributed`` process group."""

    def __init__(self) -> None:
        import torch.distributed as dist

        self._dist = dist
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()

    def allgather(self, obj: Any) -> list[Any]:
        gathered: list[Any] = [None] * self.world_size
        self._dist.all_gather_object(gathered, obj)
        return gathered


def _rank(rank: int, world_size: int, init_file: str, backend_spec: str, params: dict, out: str) -> None:
    """One spawned rank: join the gloo group, run the phase, exit with the job's status."""
    import torch.distributed as dist

    from batchspec.conformance.multirank.scenarios import rank_main

    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=world_size,
        timeout=GLOO_TIMEOUT,
    )
    try:
        ok = rank_main(TorchGroup(), backend_spec, params, out)
    finally:
        dist.destroy_process_group()
    if not ok:
        sys.exit(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, required=True, help="number of rank processes")
    parser.add_argument("--backend", required=True, help="backend spec, as pytest's --backend")
    parser.add_argument("--out", required=True, help="output directory (shared by all ranks)")
    parser.add_argument("--params", default="{}", help="JSON object of scenarios.run_phase parameters")
    args = parser.parse_args(argv)

    # Plain multiprocessing: the launcher itself never imports torch (about 3 s per job on
    # 2 cores); each spawned rank does.
    context = multiprocessing.get_context("spawn")
    init_file = Path(args.out) / "gloo-rendezvous"
    params = json.loads(args.params)
    processes = [
        context.Process(target=_rank, args=(rank, args.ranks, str(init_file), args.backend, params, args.out))
        for rank in range(args.ranks)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    failed = {rank: process.exitcode for rank, process in enumerate(processes) if process.exitcode != 0}
    if failed:
        print(f"torch_main: ranks exited non-zero (rank: exit code): {failed}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
