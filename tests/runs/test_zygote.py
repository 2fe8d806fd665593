"""The multi-rank scenarios' zygote (conformance/multirank/zygote.py): every rank process of
every phase is a new process, forked from one interpreter per pytest process under both
launchers (no interpreter start per rank: the guard of the gate's speed), and a job that is
given up on leaves no rank behind."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from batchspec.conformance.multirank.jobs import MPIEXEC, launch, rank_environment
from batchspec.conformance.multirank.zygote import Zygote, wait_all


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, ...
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture
def zygote():
    forks = Zygote(rank_environment("reference"), Path.cwd())
    yield forks
    forks.close()


def test_every_rank_of_every_phase_is_a_new_process_forked_from_one_zygote(zygote, tmp_path):
    launchers = ["torch", "torch"] + (["mpiexec"] if MPIEXEC else [])
    pids, parents = [], set()
    saved = None
    for index, launcher in enumerate(launchers):
        params = {"take": 1, "save": True} if saved is None else {"load": saved}
        returncode, results, _, output = launch(
            launcher, "reference", 2, tmp_path, f"phase{index}", zygote=zygote, **params
        )
        assert returncode == 0 and not any(r["error"] for r in results), output
        saved = saved or str(tmp_path / "phase0" / "state_r0.bin")
        pids += [r["pid"] for r in results]
        parents |= {r["parent_pid"] for r in results}
    assert len(set(pids)) == len(pids) == 2 * len(launchers), f"rank processes reused across phases: {pids}"
    assert parents == {zygote.pid}, f"rank parents {parents}, zygote {zygote.pid}"
    assert zygote.starts == 1


def test_a_rank_whose_requester_goes_away_is_killed(zygote, tmp_path):
    """One rank of a 2-rank gloo group waits for its peer forever; when the requester gives up
    (a job past its timeout), the zygote kills it."""
    out = tmp_path / "out"
    out.mkdir()
    with open(out / "log.txt", "wb") as sink, open(os.devnull, "rb") as null:
        args = [0, 2, str(out / "gloo-rendezvous"), "reference", {"scratch_dir": str(tmp_path)}, str(out)]
        conn = zygote.start(
            "torch_rank", [json.dumps(args)], {0: null.fileno(), 1: sink.fileno(), 2: sink.fileno()}, dict(os.environ)
        )
    deadline = time.monotonic() + 30
    while not children(zygote.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(children(zygote.pid)) == 1, "the rank process did not start"
    with pytest.raises(TimeoutError):
        wait_all([conn], timeout=1)
    deadline = time.monotonic() + 10
    while children(zygote.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children(zygote.pid) == [], "the zygote left the abandoned rank running"
