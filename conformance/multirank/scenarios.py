"""Multi-rank ``ZephonDataLoader`` state scenarios, written once for any launcher.

Every rank process calls ``run_phase(group, backend, params, out_dir)``. ``group`` is any
object with ``rank``, ``world_size`` and ``allgather(obj) -> list`` (see ``Group``): the MPI
launcher (``batchspec.conformance.multirank.mpi_main``) provides one over mpi4py, the torch.distributed
launcher (``batchspec.conformance.multirank.torch_main``) one over gloo's ``all_gather_object``. Both
enter through ``rank_main``.

Each rank builds its own Zephon pipeline with its coordination identity (``world_size``,
``global_rank``) and data identity (``dp_degree``, ``dp_group_id = rank // tp``), over one of
two data sources:

- ``data="f18"``: field report F18's (docs/sources.md#f18) N one-token rows ``{"input_ids": [100 + i]}``,
  ``chunk_size=1``, ``"redistribute"``, ``batch(1)``, inline runner without prefetch;
  ``convert_batch`` returns each batch's row indices, so F18's literal lists apply.
- ``data="corpus"``: the first ``docs`` documents of the real corpus (``golden/corpus``),
  tokenized with the committed BPE, ``pack_flat(seq_len + 1, first_fit)``,
  ``batch(batch_size)``; ``convert_batch`` is the backend's own ``convert_text_batch`` (the
  default contract), reduced to one key per packed row (``row_keys``).

It wraps the pipeline in the backend's ``ZephonDataLoader`` and writes its results as JSON to
``out_dir/rank{rank}.json``; the pytest side (``test_checkpoint_ranks.py``) checks them.

A phase (one launcher job) does, per rank, in this order:

1. ``uninterrupted``: a loader over a fresh pipeline (own ``run_id``) read to exhaustion,
   never checkpointed: the reference stream of this rank in this topology.
2. The phase loader (another ``run_id``): optionally ``load_state_dict`` of ``load`` (a file
   of state bytes), then ``take`` batches (``None``: to exhaustion; a list gives each rank its
   own count, so ranks save at different cursors), then, when ``save`` is
   set, ``state_dict()`` on every rank (collective; ranks in ``skip_state`` never call it),
   writing ``state_r{rank}.bin`` and recording its sha256 and everyone's sha256 (allgather).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Protocol

__all__ = ["DEFAULTS", "Group", "build_pipeline", "rank_main", "row_keys", "run_phase"]

DEFAULTS: dict[str, Any] = {
    "n": 16,  # rows
    "canonical_replicas": 4,
    "tp": 1,  # ranks per data-parallel group (TP/PP peers)
    "take": None,  # batches the phase loader takes (a list: per rank); None: to exhaustion
    "load": None,  # path of state bytes to load before iterating
    "save": False,  # call state_dict() after taking
    "uninterrupted": False,  # also read a fresh loader to exhaustion
    "skip_state": [],  # ranks that never call state_dict()
    "scratch_dir": None,  # the job's shared directory: Zephon's aggregate dir and catalog
    "aggregate_timeout_s": 30.0,
    "run_id": "phase",
    "data": "f18",  # "f18": N one-token rows; "corpus": real text, tokenized and packed
    "docs": 48,  # corpus: the first documents of golden/corpus
    "seq_len": 128,  # corpus: pack_flat(seq_len + 1)
    "batch_size": 2,  # corpus: rows per batch
}


class Group(Protocol):
    """The collective helper a launcher provides."""

    rank: int
    world_size: int

    def allgather(self, obj: Any) -> list[Any]: ...


def row_keys(training_batch) -> list[str]:
    """A packed row's identity: the sha256 (16 hex digits) of its ``input_ids``, ``labels`` and
    ``position_ids`` as int64 bytes. Equal keys mean the same packed row, converted the same way."""
    keys = []
    for row in range(training_batch["input_ids"].shape[0]):
        digest = hashlib.sha256()
        for name in ("input_ids", "labels", "position_ids"):
            digest.update(training_batch[name][row].to("cpu").long().numpy().tobytes())
        keys.append(digest.hexdigest()[:16])
    return keys


def build_pipeline(group: Group, params: dict, run_id: str):
    """This rank's pipeline: F18's one-token rows, or real corpus text (``data="corpus"``),
    with this rank's topology; Zephon's aggregate directory is ``scratch_dir/aggregate``,
    shared by the job's ranks."""
    from batchspec.conformance.helpers.pipelines import corpus_pipeline, index_pipeline

    tp = params["tp"]
    topology = {
        "world_size": group.world_size,
        "global_rank": group.rank,
        "dp_degree": group.world_size // tp,
        "dp_group_id": group.rank // tp,
        "canonical_replicas": params["canonical_replicas"],
        "run_id": run_id,
        "aggregate_timeout_s": params["aggregate_timeout_s"],
    }
    if params["data"] == "corpus":
        return corpus_pipeline(
            params["scratch_dir"],
            seq_len=params["seq_len"],
            batch_size=params["batch_size"],
            docs=params["docs"],
            chunk_size=4,
            **topology,
        )
    return index_pipeline(params["scratch_dir"], params["n"], 1, "redistribute", **topology)


def _loader(backend, group: Group, params: dict, run_id: str):
    from batchspec.conformance.helpers.pipelines import row_indices
    from batchspec.conformance.helpers.sample_batches import Contract

    contract = Contract()
    if params["data"] == "corpus":

        def convert(sample_batch):
            return row_keys(backend.convert_text_batch(sample_batch, contract, -100, True, False))
    else:
        convert = row_indices
    return backend.ZephonDataLoader(build_pipeline(group, params, run_id), convert, packing_contract=contract)


def _take(loader, k: int | None) -> list[list[int]]:
    if k is None:
        return list(loader)
    return [next(loader) for _ in range(k)]


def run_phase(group: Group, backend, params: dict, out_dir: str | Path) -> bool:
    """Run one phase on this rank; write ``rank{rank}.json``; return whether it succeeded.

    The JSON holds ``pid`` and ``parent_pid`` (the rank's process and its parent),
    ``uninterrupted`` and ``batches`` (lists of per-batch row lists), ``loaded``
    (whether ``state_dict()`` right after the load returned the loaded bytes; ``after_load``
    shows what it returned instead, ``loaded_sha256`` what was loaded),
    ``state_sha256`` and ``all_state_sha256`` (everyone's, by rank), ``error`` (the traceback
    of the first failure, or ``None``; then also ``error_type``, ``error_message`` and
    ``error_is_timeout``: whether it is a ``TimeoutError``, subclasses included) and ``state_seconds`` (how long ``state_dict()`` took,
    also when it failed).
    """
    params = {**DEFAULTS, **params}
    out_dir = Path(out_dir)
    # the process ids show that every phase runs in processes of its own (tests/runs/test_zygote.py)
    result: dict[str, Any] = {
        "rank": group.rank,
        "world_size": group.world_size,
        "error": None,
        "pid": os.getpid(),
        "parent_pid": os.getppid(),
    }
    state: bytes | None = None
    try:
        if params["uninterrupted"]:
            reference = _loader(backend, group, params, f"{params['run_id']}-uninterrupted")
            result["uninterrupted"] = _take(reference, None)
            reference.close()
        loader = _loader(backend, group, params, params["run_id"])
        if params["load"] is not None:
            loaded = Path(params["load"]).read_bytes()
            loader.load_state_dict({"zephon": loaded})
            after_load = loader.state_dict()
            result["loaded"] = after_load == {"zephon": loaded}
            result["loaded_sha256"] = hashlib.sha256(loaded).hexdigest()
            result["after_load"] = repr(after_load)[:200] if not result["loaded"] else None
        take = params["take"]
        result["batches"] = _take(loader, take[group.rank] if isinstance(take, list) else take)
        if params["save"] and group.rank not in params["skip_state"]:
            started = time.monotonic()
            try:
                state = loader.state_dict()["zephon"]
            finally:
                result["state_seconds"] = round(time.monotonic() - started, 3)
            (out_dir / f"state_r{group.rank}.bin").write_bytes(state)
            result["state_sha256"] = hashlib.sha256(state).hexdigest()
        loader.close()
    except BaseException as error:  # reported to the test, never left to hang the job
        result["error"] = traceback.format_exc()
        result["error_type"] = f"{type(error).__module__}.{type(error).__qualname__}"
        result["error_is_timeout"] = isinstance(error, TimeoutError)
        result["error_message"] = str(error)
    # Everyone reaches this collective, also after a failure, so a failing rank cannot hang
    # the others here.
    if params["save"]:
        result["all_state_sha256"] = group.allgather(result.get("state_sha256"))
    (out_dir / f"rank{group.rank}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result["error"] is None


def rank_main(group: Group, backend_spec: str, params: dict, out_dir: str | Path) -> bool:
    """A launcher's per-rank entry point: resolve the backend, run the phase, and vote.

    Set-up failures (an unknown backend, an import error) are printed and count as this
    rank's failure. Every rank then joins one ``allgather`` of the statuses, so all ranks
    agree on the job's outcome; returns whether every rank succeeded.
    """
    ok = False
    try:
        import logging

        logging.getLogger("zephon").setLevel(logging.ERROR)
        from batchspec.conformance.run.backends import load_backend

        ok = run_phase(group, load_backend(backend_spec), params, out_dir)
    except BaseException as error:  # set-up failure: report and join the exit vote
        print(f"rank {group.rank}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
    return all(group.allgather(ok))
