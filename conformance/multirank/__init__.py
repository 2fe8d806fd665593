"""Multi-rank ``ZephonDataLoader`` state scenarios (one process per rank).

``scenarios`` holds launcher-independent scenario code, parameterized by a ``Group`` (rank,
world size, allgather); ``mpi_main`` runs one scenario per ``mpiexec`` job with mpi4py.
"""
