"""Pipelines for loader, checkpoint-state and real-data scenarios.

``corpus_pipeline``: one builder, so every scenario reads the same data the same way: the
Node.js API corpus (``golden/corpus/nodejs-api``) → ``tokenize`` with the committed BPE
(BOS/EOS bracketing, long documents split) → ``pack_flat(seq_len + 1, first_fit)`` →
``batch(batch_size)``. ``index_pipeline``: the small in-memory pipeline of one-token rows of
field reports F16/F17 (docs/sources.md#loader-state-setup), read with ``row_indices`` as
``convert_batch``. Both are deterministic: inline runner, no prefetch, fixed seed. Zephon's aggregation scratch goes under
``scratch_dir``; its catalog goes where ``ZEPHON_CATALOG_DIR`` points while the pipeline runs,
which a caller scopes with ``zephon_catalog`` (or the plugin's ``scratch`` fixture): a builder
never changes the process's environment (never the shared ``$TMPDIR``). ``RecordingPipeline`` (a stand-in) and
``SpyPipeline`` (around a real one) record how a loader drives them. ``check_exact_resume`` is
the plain save-and-resume that checks of other state clauses run first;
``check_canonical_fingerprint`` the fingerprint that golden state cases check first.
``take``, ``saved_after`` and ``envelope_after`` run a loader to a state.
``fingerprint_of``, ``pack_stage`` and ``batch_stage`` write a pipeline's canonical
description by hand ([state-fingerprint-canonical]).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from batchspec.conformance.helpers.asserts import ClauseFailure, clause_failure
from batchspec.conformance.helpers.corpus import PAD_ID, SHARD_DIR, CorpusTokenizer, corpus_texts
from batchspec.conformance.helpers.envelope import body_of, canonical_json

__all__ = [
    "FINGERPRINT_PROBE",
    "FINGERPRINT_PROBE_STAGES",
    "RESUME_CLAUSES",
    "RecordingPipeline",
    "SpyPipeline",
    "batch_stage",
    "check_canonical_fingerprint",
    "check_exact_resume",
    "corpus_pipeline",
    "envelope_after",
    "fingerprint_of",
    "index_pipeline",
    "make_loader",
    "other_stages_pipeline",
    "pack_stage",
    "row_indices",
    "saved_after",
    "take",
]


@contextlib.contextmanager
def zephon_catalog(catalog_dir: str | Path) -> Iterator[None]:
    """Point ``ZEPHON_CATALOG_DIR`` (Zephon's scratch catalog) at ``catalog_dir`` for the block,
    then restore the caller's value (or unset it where it was unset): the one home of this
    save/restore."""
    saved = os.environ.get("ZEPHON_CATALOG_DIR")
    os.environ["ZEPHON_CATALOG_DIR"] = str(catalog_dir)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("ZEPHON_CATALOG_DIR", None)
        else:
            os.environ["ZEPHON_CATALOG_DIR"] = saved


def corpus_pipeline(
    scratch_dir: Path,
    *,
    seq_len: int = 1024,
    batch_size: int = 4,
    runner: str = "inline",
    exhausted_policy: str = "redistribute",
    seed: int = 1234,
    docs: int | None = None,
    chunk_size: int = 16,
    **options,
):
    """A ``zephon.Pipeline`` yielding ``SampleBatch``es of ``batch_size`` rows of
    ``seq_len + 1`` unshifted tokens (so the model sees ``seq_len``).

    ``exhausted_policy="redistribute"`` reads every document exactly once and then ends the
    stream; ``"repeat"`` never ends. ``docs``: read only the first ``docs`` documents (in
    shard order, as one in-memory shard) instead of the six shard files. Further keyword
    arguments are Zephon runtime options (``world_size``, ``dp_degree``, ...), applied last.

    Zephon reads ``ZEPHON_CATALOG_DIR`` when the pipeline starts, not here: iterate it inside
    ``zephon_catalog(scratch_dir / "catalog")`` (or under the ``scratch`` fixture) to keep its
    catalog under ``scratch_dir``. The environment is left as it was.
    """
    from zephon import Dataset, InMemoryShard, Pipeline, StaticMixtureWorkSource

    scratch_dir = Path(scratch_dir)
    if docs is None:
        dataset = Dataset.from_path("nodejs_api", str(SHARD_DIR))
    else:
        dataset = Dataset.from_dict("nodejs_api", {0: InMemoryShard([{"text": t} for t in corpus_texts()[:docs]])})
    work_source = StaticMixtureWorkSource(
        [dataset], {"nodejs_api": 1.0}, chunk_size=chunk_size, seed=seed, exhausted_policy=exhausted_policy
    )
    runtime: dict[str, Any] = {"runner": runner, "aggregate_dir": str(scratch_dir / "aggregate"), "run_id": "batchspec"}
    if runner == "inline":
        runtime.update(prefetch_batches=0, default_stage_prefetch=0)
    options = {**runtime, **options}
    return (
        Pipeline(work_source)
        .tokenize(
            tokenizer=CorpusTokenizer(),
            field="text",
            add_attention_mask=False,
            max_length=seq_len + 1,
            split_long_samples=True,
            special_tokens="bos_eos",
        )
        .pack_flat(seq_len + 1, algorithm="first_fit", num_bins=8, pad_token_id=PAD_ID)
        .batch(batch_size)
        .options(**options)
    )


class RecordingPipeline:
    """A stand-in pipeline over a list of ``SampleBatch``es that records how a loader drives
    it: ``iter()`` calls, batches handed out (``taken``, for messages: how far a loader reads
    ahead is its own matter) and how often its stream was closed.
    With ``fail_at``, the stream raises ``failure`` instead of yielding that batch. It keeps a
    reference to every stream it hands out (``streams``), as a pipeline that tracks its workers
    does, so a stream is closed only when the loader closes it [loader-close], never by the
    garbage collector when the loader merely drops it."""

    def __init__(self, batches: list, fail_at: int | None = None, failure: BaseException | None = None):
        self.batches = list(batches)
        self.fail_at = fail_at
        self.failure = failure if failure is not None else RuntimeError("pipeline worker failed")
        self.iter_calls = 0
        self.closed = 0
        self.taken = 0
        self.streams: list = []

    def __iter__(self):
        self.iter_calls += 1
        self.streams.append(self._stream())
        return self.streams[-1]

    def _stream(self):
        try:
            for index, batch in enumerate(self.batches):
                if index == self.fail_at:
                    raise self.failure
                self.taken += 1
                yield batch
        finally:
            self.closed += 1


def index_pipeline(scratch_dir, n, chunk_size, policy, *, shuffle=False, pack=None, batch_size=1, **options):
    """F16/F17's pipeline: rows ``{"input_ids": [100 + i]}``, optionally ``pack_flat(*pack)``,
    then ``batch(batch_size)``; deterministic inline runner. ``options`` are further runtime
    options (``canonical_replicas``, ``run_id``, ...)."""
    from zephon import Dataset, InMemoryShard, Pipeline, StaticMixtureWorkSource

    dataset = Dataset.from_dict("d", {0: InMemoryShard([{"input_ids": [100 + i]} for i in range(n)])})
    work_source = StaticMixtureWorkSource(
        [dataset],
        {"d": 1.0},
        chunk_size=chunk_size,
        seed=0,
        shuffle_shards=False,
        shuffle_within_shard=shuffle,
        exhausted_policy=policy,
    )
    pipeline = Pipeline(work_source)
    if pack is not None:
        pipeline = pipeline.pack_flat(
            pack[0], algorithm=pack[1], **({"num_bins": 4, "pad_token_id": 0} if pack[1] != "wrap" else {})
        )
    return pipeline.batch(batch_size).options(
        runner="inline",
        prefetch_batches=0,
        default_stage_prefetch=0,
        aggregate_dir=str(Path(scratch_dir) / "aggregate"),
        **options,
    )


def other_stages_pipeline(scratch):
    """prefetch, map_transform, shuffle, add_op, stateful_transform, pack_sequences,
    batch(drop_last=False), map_batch: stages with no settings, one left out, one unset
    (the fingerprint checks' pipeline of the stages the others do not use)."""
    from zephon import Dataset, InMemoryShard, Pipeline, StaticMixtureWorkSource

    dataset = Dataset.from_dict("d", {0: InMemoryShard([{"input_ids": [100 + i]} for i in range(8)])})
    work_source = StaticMixtureWorkSource([dataset], {"d": 1.0}, chunk_size=4, seed=0, exhausted_policy="redistribute")
    return (
        Pipeline(work_source)
        .prefetch(16)
        .map_transform(lambda payload: payload)
        .shuffle(64, seed=3)
        .add_op("keep", process_many=lambda records: records, preserves_cursor_order=True)
        .stateful_transform("pass_through", init_state=lambda: 0, push=lambda state, records: (state, records))
        .pack_sequences(16, num_bins=2)
        .batch(4, drop_last=False)
        .map_batch(lambda sample_batch: sample_batch)
        .options(runner="inline", aggregate_dir=str(scratch / "aggregate"))
    )


def make_loader(backend, pipeline):
    """The backend's ``ZephonDataLoader`` over ``pipeline`` with ``row_indices`` as
    ``convert_batch`` and the default contract: the F16-F18 setup of the state checks."""
    from batchspec.conformance.helpers.sample_batches import Contract

    return backend.ZephonDataLoader(pipeline, row_indices, packing_contract=Contract())


def take(loader, k: int) -> list:
    """The next ``k`` batches of ``loader``."""
    return [next(loader) for _ in range(k)]


def saved_after(backend, scratch_dir, k, n=10, chunk_size=2, policy="redistribute", **kwargs) -> dict:
    """F17's L1: the state after ``k`` batches of an ``index_pipeline`` (its arguments)."""
    loader = make_loader(backend, index_pipeline(scratch_dir, n, chunk_size, policy, **kwargs))
    take(loader, k)
    state = loader.state_dict()
    loader.close()
    return state


def envelope_after(backend, pipeline, k: int) -> bytes:
    """The state envelope (``state_dict()["zephon"]``) of ``pipeline`` after ``k`` batches."""
    loader = make_loader(backend, pipeline)
    take(loader, k)
    data = loader.state_dict()["zephon"]
    loader.close()
    return data


RESUME_CLAUSES = ("state-after-start", "state-exact-resume")


def check_exact_resume(backend, scratch_dir, n=10, chunk_size=2, policy="redistribute", *, after=3, **options) -> None:
    """The prerequisite of every check that reads a resumed stream: over F17's index pipeline
    (``index_pipeline``'s settings), a state saved after ``after`` batches and loaded into a new
    loader resumes exactly the rest of the uninterrupted stream ([state-after-start],
    [state-exact-resume]). A check of another state clause (loading twice, loading after a
    rejected load, ...) runs it first, so that a loader whose plain save-and-resume is off is
    blamed on these two clauses, not on the clause the check is about.

    Raises:
        ClauseFailure: blamed on [state-after-start] and [state-exact-resume], naming both streams.
    """
    __tracebackhide__ = True
    root = Path(scratch_dir) / "exact-resume-probe"
    with zephon_catalog(root / "catalog"):  # Zephon's scratch state stays under scratch_dir
        whole = list(make_loader(backend, index_pipeline(root / "whole", n, chunk_size, policy, **options)))
        first = make_loader(backend, index_pipeline(root / "first", n, chunk_size, policy, **options))
        for _ in range(after):
            next(first)
        state = first.state_dict()
        first.close()
        resumed = make_loader(backend, index_pipeline(root / "resumed", n, chunk_size, policy, **options))
        resumed.load_state_dict(state)
        rest = list(resumed)
    if rest != whole[after:]:
        raise ClauseFailure(
            f"a state saved after {after} batches resumes {rest}, but should resume the rest of the stream "
            f"{whole[after:]} (uninterrupted: {whole}) [state-after-start, state-exact-resume: "
            f"index_pipeline(n={n}, chunk_size={chunk_size}, policy={policy!r}, {options})]",
            RESUME_CLAUSES,
        )


def pack_stage(op: str, max_length: int, algorithm: str, num_bins=None, pad_token_id=None) -> dict:
    """A ``pack_flat`` / ``pack_sequences`` stage's description ([state-fingerprint-canonical] item 2)."""
    return {
        "op": op,
        "max_length": max_length,
        "algorithm": algorithm,
        "num_bins": num_bins,
        "pad_token_id": pad_token_id,
    }


def batch_stage(batch_size: int, drop_last: bool = True) -> dict:
    """A ``batch`` stage's description ([state-fingerprint-canonical] item 3)."""
    return {"op": "batch", "batch_size": batch_size, "drop_last": drop_last}


def fingerprint_of(stages: list[dict]) -> str:
    """sha256 hex of the canonical JSON of the description ``{"batchspec_fingerprint": 1,
    "stages": stages}`` [state-fingerprint-canonical]."""
    return hashlib.sha256(canonical_json({"batchspec_fingerprint": 1, "stages": stages})).hexdigest()


# index_pipeline(16 rows, chunks of 4, pack_flat(8, first_fit), batches of 2) and its stages
FINGERPRINT_PROBE = dict(n=16, chunk_size=4, policy="redistribute", pack=(8, "first_fit"), batch_size=2)
FINGERPRINT_PROBE_STAGES = [pack_stage("pack_flat", 8, "first_fit", 4, 0), batch_stage(2)]


def check_canonical_fingerprint(backend, scratch_dir) -> None:
    """The prerequisite of every golden checkpoint-state case: a state saved after one batch of
    a fixed pipeline (``FINGERPRINT_PROBE``) carries the canonical fingerprint, the sha256 of
    its description written here by hand. Golden state cases store whole envelopes, so a
    fingerprint computed another way (keys unsorted, other separators, other settings) fails
    here first, blamed on [state-fingerprint-canonical], not on the clauses of the case.

    Raises:
        ClauseFailure: blamed on [state-fingerprint-canonical], naming both digests and the
            canonical description.
    """
    __tracebackhide__ = True
    root = Path(scratch_dir) / "fingerprint-probe"
    loader = make_loader(backend, index_pipeline(root, **FINGERPRINT_PROBE))
    try:
        next(loader)
        data = loader.state_dict()["zephon"]
    finally:
        loader.close()
    got = body_of(data).get("fingerprint")
    want = fingerprint_of(FINGERPRINT_PROBE_STAGES)
    if got != want:
        description = canonical_json({"batchspec_fingerprint": 1, "stages": FINGERPRINT_PROBE_STAGES}).decode()
        raise clause_failure(
            f"the envelope's fingerprint is {got!r}, but should be {want}, the sha256 of {description}",
            clause="state-fingerprint-canonical",
            call=f"index_pipeline({FINGERPRINT_PROBE}), state after 1 batch",
        )


def row_indices(sample_batch) -> list[int]:
    """``convert_batch`` of F16–F18: the batch's row indices, no tensor conversion."""
    return [record.meta.sample_id[2] for record in sample_batch.records]


class SpyPipeline:
    """Delegates to a real pipeline and counts how the loader drives it."""

    def __init__(self, inner):
        self._inner = inner
        self.calls = {"iter": 0, "checkpoint": 0, "restore": 0}

    def __iter__(self):
        self.calls["iter"] += 1
        return iter(self._inner)

    def checkpoint(self):
        self.calls["checkpoint"] += 1
        return self._inner.checkpoint()

    def restore(self, state):
        self.calls["restore"] += 1
        return self._inner.restore(state)

    def __getattr__(self, name):
        return getattr(self._inner, name)
