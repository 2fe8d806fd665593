"""One interpreter that forks the multi-rank scenarios' rank processes, for both launchers.

A rank process of a multi-rank scenario spends most of its life importing torch and zephon
(about 2 s of CPU each, on the 2-core CI machine, against well under a second of scenario
work). The zygote imports them once (``PRELOAD``) and forks every rank process from itself:

    python -m batchspec.conformance.multirank.zygote serve SOCKET

A rank process is still a new process per phase (a phase is a fresh set of processes, as after
a restart): the zygote never runs a phase, never calls a torch operator, never imports the
backend (each rank loads it after the fork, as a fresh interpreter does; a backend may start
threads or a device runtime when imported) and holds one thread when it forks. What a rank
saves is the interpreter start and those imports.

A rank is asked for over the zygote's UNIX socket with the file descriptors it is to run with
(``request``; SCM_RIGHTS): its stdin, stdout and stderr, and for an MPI rank the PMI socket that
``mpiexec`` gave the process it started. Under ``mpiexec`` that process is a thin client:

    mpiexec -n K python -m batchspec.conformance.multirank.zygote rank SOCKET mpi_main ARGS...

which passes its descriptors, environment, working directory and arguments to the zygote,
waits for the rank's exit code and exits with it: the forked rank initialises MPI through
``mpiexec``'s PMI socket, so it is rank r of the job as the thin client would have been. The
torch launcher asks for K ``torch_rank`` processes directly (``Zygote.start``). The zygote
replies with the rank's exit code (a negative code is the signal that ended it) and kills a
rank whose requester went away (a job killed for its timeout).

This module imports only the standard library until ``serve`` preloads, so that the thin
client starts in a few tens of milliseconds.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["PRELOAD", "TARGETS", "Zygote", "request", "serve"]

# What the zygote imports before it forks: the launchers' and the data loader's libraries and
# the scenario code, never the backend
PRELOAD = ("torch", "torch.distributed", "zephon", "batchspec.conformance.multirank.scenarios")
# What a forked rank runs: mpi_main's entry point (argv), or one torch.distributed rank
TARGETS = ("mpi_main", "torch_rank")
_HEADER = 8  # bytes of the request's length, sent with the descriptors


def request(path: str | Path, target: str, args: list[str], fds: dict[int, int], env: dict, cwd: str) -> socket.socket:
    """Ask the zygote at ``path`` for one rank process; returns the connection its exit code
    arrives on (4 bytes, signed, big-endian) when the rank ends.

    ``fds`` maps the descriptor numbers the rank must see (0, 1, 2, the PMI socket's number) to
    descriptors of this process; ``args``: mpi_main's argv, or ``torch_rank``'s one JSON
    argument. Raises ``OSError`` when the zygote cannot be reached.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    body = json.dumps({"target": target, "args": args, "numbers": list(fds), "env": env, "cwd": cwd}).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))
    socket.send_fds(conn, [len(body).to_bytes(_HEADER, "big")], list(fds.values()))
    conn.sendall(body)
    return conn


def exit_code(conn: socket.socket) -> int:
    """The exit code the zygote sent on ``conn`` (1 when it closed without one)."""
    data = b""
    while len(data) < 4:
        chunk = conn.recv(4 - len(data))
        if not chunk:
            return 1
        data += chunk
    return int.from_bytes(data, "big", signed=True)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    header, fds, _, _ = socket.recv_fds(conn, _HEADER, maxfds=8)
    size = int.from_bytes(header, "big")
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the requester closed the connection mid-request")
        body += chunk
    return json.loads(body), fds


def _run_rank(job: dict, fds: list[int]) -> int:
    """In the forked rank process: take the requester's descriptors, environment, working
    directory and ``PYTHONPATH``, then run the target; returns its exit code."""
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]  # out of the way of the numbers they go to
    for fd in fds:
        os.close(fd)
    for number, fd in zip(job["numbers"], moved, strict=True):
        os.dup2(fd, number)  # dup2 clears close-on-exec; the PMI socket must survive as it is
        os.close(fd)
    os.environ.clear()
    os.environ.update(job["env"])
    os.chdir(job["cwd"])
    for entry in reversed([e for e in job["env"].get("PYTHONPATH", "").split(os.pathsep) if e]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if job["target"] == "mpi_main":
        from batchspec.conformance.multirank import mpi_main

        sys.argv = ["mpi_main", *job["args"]]
        try:
            code = mpi_main.main(job["args"])
        finally:
            from mpi4py import MPI

            if MPI.Is_initialized() and not MPI.Is_finalized():
                MPI.Finalize()  # os._exit skips mpi4py's atexit finalisation
        return code
    from batchspec.conformance.multirank.torch_main import _rank

    try:
        _rank(*json.loads(job["args"][0]))
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    return 0


def _fork_rank(conn: socket.socket, others: list[socket.socket], server: socket.socket) -> int:
    """Receive one request on ``conn`` and fork its rank; returns the rank's pid."""
    job, fds = _receive(conn)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            server.close()
            for other in [conn, *others]:
                other.close()
            code = _run_rank(job, fds)
        except BaseException:  # a rank that fails to start reports it and exits 1
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            if job["target"] == "mpi_main":
                # the C library's exit: MPICH tells mpiexec's proxy that the rank finalised from
                # a C exit handler, and the proxy kills the whole job when a rank's PMI socket
                # closes without it; Python's own exit handlers are the zygote's, never run here
                import ctypes

                ctypes.CDLL(None).exit(code)
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return pid


def serve(path: str | Path) -> int:
    """Preload, listen on ``path``, print ``ready`` and fork ranks until stdin closes; then kill
    the ranks still running and return."""
    import importlib
    import threading

    for name in PRELOAD:
        importlib.import_module(name)
    if threading.active_count() != 1:
        raise RuntimeError(f"the zygote holds {threading.active_count()} threads after its imports; it forks with one")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(64)
    print("ready", flush=True)
    ranks: dict[socket.socket, int] = {}  # requester's connection -> the rank's pid
    try:
        while True:
            readable, _, _ = select.select([sys.stdin, server, *ranks], [], [], 0.02)
            if sys.stdin in readable and not sys.stdin.readline():
                return 0
            if server in readable:
                conn, _ = server.accept()
                try:
                    ranks[conn] = _fork_rank(conn, list(ranks), server)
                except (OSError, ValueError) as error:  # a requester that died mid-request
                    print(f"zygote: dropped a request: {error}", file=sys.stderr, flush=True)
                    conn.close()
            for conn in [c for c in readable if c in ranks]:  # the requester went away: so does its rank
                _kill(ranks.pop(conn))
                conn.close()
            for conn, pid in list(ranks.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                    try:
                        conn.sendall(code.to_bytes(4, "big", signed=True))
                    except OSError:
                        pass
                    conn.close()
                    del ranks[conn]
    finally:
        for pid in ranks.values():
            _kill(pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


class Zygote:
    """The client side: one zygote process per pytest process, started on first use.

    ``env`` and ``cwd`` are the zygote's (its ``sys.path`` comes from ``env["PYTHONPATH"]``).
    ``starts`` counts the zygote processes started (one unless one died).
    """

    def __init__(self, env: dict, cwd: str | Path) -> None:
        self._env, self._cwd = env, str(cwd)
        self._process: subprocess.Popen | None = None
        self._workdir: Path | None = None
        self.starts = 0

    @property
    def pid(self) -> int | None:
        """The running zygote's process id, or None."""
        return None if self._process is None else self._process.pid

    def socket_path(self) -> Path:
        """The zygote's socket (in a folder of its own under the temporary directory, whose path
        stays short enough for a UNIX socket), starting the zygote first if none runs.

        Raises:
            RuntimeError: the zygote exited before it was ready (its stderr is in the message).
        """
        if self._process is not None and self._process.poll() is None:
            assert self._workdir is not None  # set before the zygote starts, cleared after it ends
            return self._workdir / "zygote.sock"
        self.close()
        self._workdir = Path(tempfile.mkdtemp(prefix="batchspec-zygote-"))
        path = self._workdir / "zygote.sock"
        stderr = self._workdir / "stderr.txt"
        with open(stderr, "a", encoding="utf-8") as errors:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "batchspec.conformance.multirank.zygote", "serve", str(path)],
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                start_new_session=True,
            )
        self.starts += 1
        assert self._process.stdout is not None  # stdout=PIPE
        if self._process.stdout.readline().strip() != "ready":
            self._process.wait()
            raise RuntimeError(f"the zygote exited (rc={self._process.returncode}): {stderr.read_text()[-3000:]}")
        return path

    def start(self, target: str, args: list[str], fds: dict[int, int], env: dict) -> socket.socket:
        """One rank process (``request``) in this process's working directory."""
        return request(self.socket_path(), target, args, fds, env, self._cwd)

    def close(self) -> None:
        """End the zygote (closing its stdin ends it, and any rank still running) and remove
        its folder."""
        if self._process is not None:
            if self._process.poll() is None:
                assert self._process.stdin is not None  # stdin=PIPE
                self._process.stdin.close()
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self._process.pid, signal.SIGKILL)
                    self._process.wait()
            self._process = None
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


def wait_all(conns: list[socket.socket], timeout: float) -> list[int]:
    """The exit codes of the ranks behind ``conns``, in order.

    Raises:
        TimeoutError: not every rank ended within ``timeout`` seconds; the connections are
            closed, so the zygote kills the ranks still running.
    """
    import time

    deadline = time.monotonic() + timeout
    codes: dict[int, int] = {}
    try:
        while len(codes) < len(conns):
            left = deadline - time.monotonic()
            pending = [c for i, c in enumerate(conns) if i not in codes]
            readable, _, _ = select.select(pending, [], [], max(left, 0))
            if not readable:
                raise TimeoutError(f"{len(pending)} of {len(conns)} ranks still ran after {timeout}s")
            for conn in readable:
                codes[conns.index(conn)] = exit_code(conn)
    finally:
        for conn in conns:
            conn.close()
    return [codes[i] for i in range(len(conns))]


def main(argv: list[str] | None = None) -> int:
    """``serve SOCKET``, or ``rank SOCKET TARGET ARGS...`` (the thin client ``mpiexec`` starts)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"] and len(argv) == 2:
        return serve(argv[1])
    if argv[:1] == ["rank"] and len(argv) >= 3:
        fds = {0: 0, 1: 1, 2: 2}
        if "PMI_FD" in os.environ:
            fds[int(os.environ["PMI_FD"])] = int(os.environ["PMI_FD"])
        conn = request(argv[1], argv[2], argv[3:], fds, dict(os.environ), os.getcwd())
        code = exit_code(conn)
        return code if code >= 0 else 128 - code
    print(__doc__.split("\n\n")[0], file=sys.stderr)
    print("usage: zygote serve SOCKET | zygote rank SOCKET {mpi_main,torch_rank} ARGS...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
