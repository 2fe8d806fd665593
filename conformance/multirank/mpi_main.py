"""Run one multi-rank scenario phase per ``mpiexec`` job, one process per rank.

    mpiexec -n K python -m batchspec.conformance.multirank.mpi_main --backend NAME --out DIR \
        --params '{"take": 1, "save": true, ...}'

Every rank runs ``scenarios.rank_main``: it resolves ``--backend`` with
``batchspec.conformance.run.backends.load_backend``, runs ``scenarios.run_phase`` and writes
``DIR/rank{rank}.json``. The job exits 0 when every rank
succeeded, 1 otherwise (each rank exits with the job's status, after the others finished).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


class MpiGroup:
    """``scenarios.Group`` over mpi4py's COMM_WORLD.

    Collectives first wait in a non-blocking barrier polled with short sleeps: MPICH
    busy-polls in blocking calls, and a rank spinning there would starve the ranks still
    working when there are more ranks than cores.
    """

    def __init__(self) -> None:
        from mpi4py import MPI

        self._comm = MPI.COMM_WORLD
        self.rank = self._comm.Get_rank()
        self.world_size = self._comm.Get_size()

    def _gentle_barrier(self) -> None:
        request = self._comm.Ibarrier()
        while not request.Test():
            time.sleep(0.005)

    def allgather(self, obj: Any) -> list[Any]:
        self._gentle_barrier()
        return self._comm.allgather(obj)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", required=True, help="backend spec, as pytest's --backend")
    parser.add_argument("--out", required=True, help="output directory (shared by all ranks)")
    parser.add_argument("--params", default="{}", help="JSON object of scenarios.run_phase parameters")
    args = parser.parse_args(argv)

    from batchspec.conformance.multirank.scenarios import rank_main

    return 0 if rank_main(MpiGroup(), args.backend, json.loads(args.params), args.out) else 1


if __name__ == "__main__":
    sys.exit(main())
