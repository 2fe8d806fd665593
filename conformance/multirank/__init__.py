"""Multi-rank ``ZephonDataLoader`` state scenarios (one process per rank).

``scenarios`` holds launcher-independent scenario code, parameterized by a ``Group`` (rank,
world size, allgather); ``launchers`` the ``--launcher`` choices; ``jobs`` launches one job on K
rank processes, forked by a ``zygote`` or started as ``mpi_main`` (mpiexec with mpi4py) or
``torch_main`` (torch.distributed) interpreters; ``checks`` what the ranks' results must show.
"""
