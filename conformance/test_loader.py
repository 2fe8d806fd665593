"""``ZephonDataLoader`` iteration and ``close`` (SPEC.md, "``ZephonDataLoader`` (iteration and
``close``)")."""

from __future__ import annotations

import collections.abc
import functools
import threading
import time
from collections import Counter
from typing import cast

import pytest
from zephon import SampleBatch, SampleMeta, SampleRecord

from batchspec.conformance.helpers.asserts import Value, assert_raises, call_valid, check
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.pipelines import RecordingPipeline, corpus_pipeline
from batchspec.conformance.helpers.sample_batches import Contract, packed_row, sample_batch


def three_batches():
    return [sample_batch([packed_row([[10 + k, 11 + k], [12 + k]], padding=1)]) for k in range(3)]


def identity_convert(sample_batch):
    return {"sample_batch": sample_batch}


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-construct-lazy", "loader-construct-validates")
def test_construction_does_not_start_the_pipeline(backend):
    """Building the loader never calls iter(pipeline); packing_contract is keyword-only."""
    pipeline = RecordingPipeline(three_batches())
    backend.ZephonDataLoader(pipeline, identity_convert, packing_contract=Contract())
    check(
        pipeline.iter_calls == 0,
        f"iter(pipeline) called {pipeline.iter_calls} time(s) at construction, but should be 0",
        clause="loader-construct-lazy",
    )
    with pytest.raises(TypeError):
        backend.ZephonDataLoader(pipeline, identity_convert, "batched", Contract())
    assert pipeline.iter_calls == 0


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-construct-validates", "types-output-format", "contract-validation")
@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"packing_contract": Contract("flash_varlen")}, ValueError, ("packed_mask_type",)),
        # a str where the contract holds a bool, on purpose: the loader must refuse it
        (
            {"packing_contract": Contract("block_causal", cast(bool, "yes"))},
            TypeError,
            ("return_packed_sequence_metadata",),
        ),
        (
            {"packing_contract": Contract(), "output_format": "bshd"},
            ValueError,
            ("output_format", "batched", "thd", Value("bshd")),
        ),
        # [contract-validation] item 6 one past its bound (max_sequence_length < 1)
        ({"packing_contract": Contract(max_sequence_length=0)}, ValueError, ("max_sequence_length",)),
    ],
    ids=["bad-mask-type", "bad-metadata-flag", "bad-output-format", "max-sequence-length-0"],
)
def test_construction_validates_contract_and_format(backend, kwargs, error, words):
    """A bad contract or output format is rejected once, at construction."""
    pipeline = RecordingPipeline(three_batches())
    assert_raises(
        error,
        words,
        backend.ZephonDataLoader,
        pipeline,
        identity_convert,
        clause="loader-construct-validates",
        **kwargs,
    )
    assert pipeline.iter_calls == 0


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-construct-validates", "contract-validation", "contract-validation.6")
def test_construction_accepts_max_sequence_length_at_its_bound(backend):
    """A contract whose ``max_sequence_length`` is 1, exactly [contract-validation] item 6's bound
    (< 1 raises), is valid: the loader is built."""
    pipeline = RecordingPipeline(three_batches())
    call = "ZephonDataLoader(pipeline, convert, packing_contract=Contract(max_sequence_length=1))"
    loader = call_valid(
        lambda: backend.ZephonDataLoader(pipeline, identity_convert, packing_contract=Contract(max_sequence_length=1)),
        clause="contract-validation",
        call=call,
    )
    check(loader is not None, f"{call} returned None", clause="loader-construct-validates")


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-construct-validates")
def test_convert_batch_must_be_callable(backend):
    """A convert_batch that cannot be called is a TypeError at construction."""
    assert_raises(
        TypeError,
        (),
        backend.ZephonDataLoader,
        RecordingPipeline([]),
        "not callable",
        packing_contract=Contract(),
        clause="loader-construct-validates",
    )


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-iter-self", "loader-next", "loader-exhaustion")
def test_iteration_yields_converted_batches_then_stops_for_good(backend):
    """One owned stream, in order, each batch converted; exhaustion closes and stays stopped."""
    batches = three_batches()
    pipeline = RecordingPipeline(batches)
    seen = []
    loader = backend.ZephonDataLoader(
        pipeline, lambda sb: seen.append(sb) or {"n": len(seen)}, packing_contract=Contract()
    )
    check(
        iter(loader) is loader,
        "iter(loader) must return the loader itself",
        clause="loader-iter-self",
    )
    out = [next(loader), next(iter(loader)), next(loader)]
    check(
        out == [{"n": 1}, {"n": 2}, {"n": 3}],
        f"yielded {out}, but should be the convert_batch results in order",
        clause="loader-next",
    )
    check(
        seen == batches,
        "convert_batch must receive the stream's SampleBatches in order",
        clause="loader-next",
    )
    check(
        pipeline.iter_calls == 1,
        f"iter(pipeline) called {pipeline.iter_calls} times, but should be 1",
        clause="loader-iter-self",
    )
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(loader)
    check(
        pipeline.closed == 1,
        f"stream closed {pipeline.closed} times after exhaustion, but should be 1",
        clause="loader-exhaustion",
    )
    check(
        pipeline.iter_calls == 1,
        "exhaustion must not restart the stream",
        clause="loader-exhaustion",
    )


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-close")
def test_close_is_idempotent_and_stops_iteration(backend):
    """close() releases the stream once; later next() raises StopIteration without restarting."""
    pipeline = RecordingPipeline(three_batches())
    loader = backend.ZephonDataLoader(pipeline, identity_convert, packing_contract=Contract())
    next(loader)
    loader.close()
    loader.close()
    check(
        pipeline.closed == 1,
        f"stream closed {pipeline.closed} times, but should be 1",
        clause="loader-close",
    )
    with pytest.raises(StopIteration):
        next(loader)
    check(
        pipeline.iter_calls == 1,  # (how many batches a loader reads ahead is its own matter)
        "next() after close() must not restart the stream",
        clause="loader-close",
    )
    fresh = backend.ZephonDataLoader(RecordingPipeline(three_batches()), identity_convert, packing_contract=Contract())
    fresh.close()  # closing a never-started loader is allowed


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-failure-closes")
def test_pipeline_or_conversion_failure_closes_the_loader(backend):
    """The original exception propagates and the stream is released."""
    pipeline = RecordingPipeline(three_batches(), fail_at=1)
    loader = backend.ZephonDataLoader(pipeline, identity_convert, packing_contract=Contract())
    next(loader)
    with pytest.raises(RuntimeError) as raised:
        next(loader)
    check(
        raised.value is pipeline.failure,
        f"next() raised {raised.value!r}, but should re-raise the pipeline's own exception object {pipeline.failure!r}",
        clause="loader-failure-closes",
    )
    check(
        pipeline.closed == 1,
        "a pipeline failure must close the stream",
        clause="loader-failure-closes",
    )
    with pytest.raises(StopIteration):
        next(loader)

    conversion_failure = ValueError("conversion failed")

    def broken_convert(sample_batch):
        raise conversion_failure

    pipeline = RecordingPipeline(three_batches())
    loader = backend.ZephonDataLoader(pipeline, broken_convert, packing_contract=Contract())
    with pytest.raises(ValueError) as raised:
        next(loader)
    check(
        raised.value is conversion_failure,
        f"next() raised {raised.value!r}, but should re-raise convert_batch's own exception object",
        clause="loader-failure-closes",
    )
    check(
        pipeline.closed == 1,
        "a convert_batch failure must close the stream",
        clause="loader-failure-closes",
    )


@pytest.mark.requires("zephon_loader", "convert_text_batch")
@pytest.mark.clause("loader-close", "loader-next")
def test_close_releases_real_zephon_workers(backend, scratch):
    """With Zephon's threads runner, close() brings the thread count back to its baseline."""
    baseline = threading.active_count()
    pipeline = corpus_pipeline(scratch, seq_len=128, batch_size=2, runner="threads", exhausted_policy="repeat")
    convert = functools.partial(
        backend.convert_text_batch,
        packing_contract=Contract(),
        ignore_index=IGNORE_INDEX,
        mask_segment_starts=False,
        allow_cross_document_attention=False,
    )
    loader = backend.ZephonDataLoader(pipeline, convert, packing_contract=Contract())
    batch = next(loader)
    check(
        tuple(batch["input_ids"].shape) == (2, 128),
        f"input_ids.shape={tuple(batch['input_ids'].shape)}, but should be (2, 128)",
        clause="loader-next",
    )
    assert threading.active_count() > baseline, "# sanity check: the threads runner should have started workers"
    loader.close()
    deadline = time.monotonic() + 10
    while threading.active_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    leftover = [t.name for t in threading.enumerate()][baseline:]
    check(
        threading.active_count() <= baseline,
        f"{threading.active_count() - baseline} worker thread(s) still alive after close(): {leftover}",
        clause="loader-close",
    )
    with pytest.raises(StopIteration):
        next(loader)


class FailingToStartPipeline:
    """A pipeline whose iter() raises, as a worker that cannot start would."""

    def __init__(self):
        self.iter_calls = 0
        self.failure = OSError("cannot start workers")

    def __iter__(self):
        self.iter_calls += 1
        raise self.failure


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-failure-closes")
def test_failure_to_start_closes_and_never_restarts(backend):
    """If iter(pipeline) raises, the error propagates once and later next() calls stop."""
    pipeline = FailingToStartPipeline()
    loader = backend.ZephonDataLoader(pipeline, identity_convert, packing_contract=Contract())
    with pytest.raises(OSError) as raised:
        next(loader)
    check(
        raised.value is pipeline.failure,
        f"next() raised {raised.value!r}, but should re-raise iter(pipeline)'s own exception object",
        clause="loader-failure-closes",
    )
    for _ in range(2):
        with pytest.raises(StopIteration):
            next(loader)
    check(
        pipeline.iter_calls == 1,
        f"iter(pipeline) called {pipeline.iter_calls} times, but should be 1",
        clause="loader-failure-closes",
    )


# --- ``ZephonDataLoader`` as a training framework sees it (SPEC.md, "``ZephonDataLoader`` ------


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-iterator", "loader-iter-self")
def test_the_loader_is_an_iterator(backend):
    """``isinstance(loader, collections.abc.Iterator)``, so ``next()`` and ``for`` work on it
    as on any iterator."""
    loader = backend.ZephonDataLoader(
        RecordingPipeline(three_batches()), lambda sb: {"batch": sb}, packing_contract=Contract()
    )
    check(
        isinstance(loader, collections.abc.Iterator),
        f"{type(loader).__name__} is not a collections.abc.Iterator",
        clause="loader-iterator",
    )
    check(issubclass(backend.ZephonDataLoader, collections.abc.Iterator), "", clause="loader-iterator")
    check(len([batch for batch in loader]) == 3, "", clause="loader-iterator")


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-distributed-checkpointing")
def test_use_distributed_checkpointing_is_true(backend):
    """The bool ``True`` on the class and on every instance, before and after iteration."""
    cls = backend.ZephonDataLoader
    value = getattr(cls, "use_distributed_checkpointing", "<missing>")
    check(
        value is True,
        f"ZephonDataLoader.use_distributed_checkpointing={value!r}, but should be True",
        clause="loader-distributed-checkpointing",
    )
    loader = cls(RecordingPipeline(three_batches()), lambda sb: {"batch": sb}, packing_contract=Contract())
    for when, step in (
        ("before iteration", lambda: next(loader)),
        ("after next()", loader.close),
        ("after close()", lambda: None),
    ):
        value = getattr(loader, "use_distributed_checkpointing", "<missing>")
        check(
            value is True,
            f"loader.use_distributed_checkpointing={value!r} {when}, but should be True",
            clause="loader-distributed-checkpointing",
        )
        step()


def _batch_with_counts(counts: list[dict | None]) -> SampleBatch:
    records = [
        SampleRecord(
            meta=SampleMeta(sample_id=(0, 0, i), lane_id=0, chunk_id=0, chunk_offset=i, component_token_counts=c),
            payload={"input_ids": [1, 2]},
        )
        for i, c in enumerate(counts)
    ]
    return SampleBatch(records=tuple(records))


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-component-tokens")
def test_component_token_counts_are_added_up(backend):
    """Each record's ``meta.component_token_counts`` is added into ``_component_tokens``, per
    component, batch by batch; a record without counts adds nothing."""
    batches = [
        _batch_with_counts([{0: 3, 1: 5}, {1: 2}]),
        _batch_with_counts([None, {2: 7}]),
        _batch_with_counts([{0: 1}]),
    ]
    loader = backend.ZephonDataLoader(RecordingPipeline(batches), lambda sb: {"batch": sb}, packing_contract=Contract())
    expected = [{0: 3, 1: 7}, {0: 3, 1: 7, 2: 7}, {0: 4, 1: 7, 2: 7}]
    for k, want in enumerate(expected):
        next(loader)
        counts = getattr(loader, "_component_tokens", None)
        check(
            isinstance(counts, Counter) and dict(+counts) == want,
            f"_component_tokens after batch {k + 1} is {counts!r}, but should be Counter({want})",
            clause="loader-component-tokens",
        )


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-component-tokens", "loader-next")
def test_component_token_counts_of_a_real_pipeline(backend, scratch):
    """Over the tokenized, packed corpus, ``_component_tokens`` is the sum of the counts Zephon
    put on the records of the batches returned so far."""
    loader = backend.ZephonDataLoader(
        corpus_pipeline(scratch, seq_len=64, batch_size=2, docs=16),
        lambda sb: {"batch": sb},
        packing_contract=Contract(),
    )
    expected: Counter = Counter()
    for _ in range(4):
        returned = next(loader)["batch"]
        for record in returned.records:
            expected.update(record.meta.component_token_counts or {})
        check(
            +loader._component_tokens == +expected,
            f"_component_tokens={loader._component_tokens!r}, but should be {expected!r}",
            clause="loader-component-tokens",
        )
    assert sum(expected.values()) > 0, "# sanity: Zephon counts tokens per component on packed records"
    loader.close()


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-next")
def test_batches_are_what_convert_batch_returns_whatever_the_loader_options(backend):
    """The loader's own ``output_format`` and ``packing_contract`` are validated at construction
    but never applied to a batch: next() returns the very object ``convert_batch`` returned,
    also when it is not of that format (A3)."""
    made = []

    def convert(sample_batch):
        made.append({"input_ids": sample_batch, "attention_mask": None})  # not THD, no metadata
        return made[-1]

    loader = backend.ZephonDataLoader(
        RecordingPipeline(three_batches()), convert, "thd", packing_contract=Contract("document_ids", True)
    )
    for k in range(3):
        got = next(loader)
        check(
            got is made[k],
            f"next() returned {got!r}, but should return convert_batch's object itself",
            clause="loader-next",
        )
        check(
            list(got) == ["input_ids", "attention_mask"],
            "the loader must not rewrite the batch",
            clause="loader-next",
        )
