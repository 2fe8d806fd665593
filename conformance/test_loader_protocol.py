"""``ZephonDataLoader`` as a training framework sees it (SPEC.md, "``ZephonDataLoader``
(iteration and ``close``)"): an iterator, its distributed-checkpointing flag, the token
counts it keeps, and batches passed on exactly as ``convert_batch`` returns them."""

from __future__ import annotations

import collections.abc
from collections import Counter

import pytest
from zephon import SampleBatch, SampleMeta, SampleRecord

from conformance.helpers.inputs import Contract, packed_row, sample_batch
from conformance.helpers.pipelines import RecordingPipeline, corpus_pipeline


def three_batches():
    return [sample_batch([packed_row([[10 + k, 11 + k], [12 + k]], padding=1)]) for k in range(3)]


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-iterator", "loader-iter-self")
def test_the_loader_is_an_iterator(backend):
    """``isinstance(loader, collections.abc.Iterator)``, so ``next()`` and ``for`` work on it
    as on any iterator."""
    loader = backend.ZephonDataLoader(
        RecordingPipeline(three_batches()), lambda sb: {"batch": sb}, packing_contract=Contract()
    )
    assert isinstance(loader, collections.abc.Iterator), (
        f"{type(loader).__name__} is not a collections.abc.Iterator [loader-iterator]"
    )
    assert issubclass(backend.ZephonDataLoader, collections.abc.Iterator), "[loader-iterator]"
    assert len([batch for batch in loader]) == 3, "[loader-iterator]"


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-distributed-checkpointing")
def test_use_distributed_checkpointing_is_true(backend):
    """The bool ``True`` on the class and on every instance, before and after iteration."""
    cls = backend.ZephonDataLoader
    value = getattr(cls, "use_distributed_checkpointing", "<missing>")
    assert value is True, (
        f"ZephonDataLoader.use_distributed_checkpointing={value!r}, but should be True [loader-distributed-checkpointing]"
    )
    loader = cls(RecordingPipeline(three_batches()), lambda sb: {"batch": sb}, packing_contract=Contract())
    for when, step in (
        ("before iteration", lambda: next(loader)),
        ("after next()", loader.close),
        ("after close()", lambda: None),
    ):
        value = getattr(loader, "use_distributed_checkpointing", "<missing>")
        assert value is True, (
            f"loader.use_distributed_checkpointing={value!r} {when}, but should be True [loader-distributed-checkpointing]"
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
        assert isinstance(counts, Counter) and dict(+counts) == want, (
            f"_component_tokens after batch {k + 1} is {counts!r}, but should be Counter({want}) [loader-component-tokens]"
        )


@pytest.mark.requires("zephon_loader")
@pytest.mark.clause("loader-component-tokens", "loader-next")
def test_component_token_counts_of_a_real_pipeline(backend, tmp_path):
    """Over the tokenized, packed corpus, ``_component_tokens`` is the sum of the counts Zephon
    put on the records of the batches returned so far."""
    loader = backend.ZephonDataLoader(
        corpus_pipeline(tmp_path, seq_len=64, batch_size=2, docs=16),
        lambda sb: {"batch": sb},
        packing_contract=Contract(),
    )
    expected: Counter = Counter()
    for _ in range(4):
        returned = next(loader)["batch"]
        for record in returned.records:
            expected.update(record.meta.component_token_counts or {})
        assert +loader._component_tokens == +expected, (
            f"_component_tokens={loader._component_tokens!r}, but should be {expected!r} [loader-component-tokens]"
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
        assert got is made[k], f"next() returned {got!r}, but should return convert_batch's object itself [loader-next]"
        assert list(got) == ["input_ids", "attention_mask"], "the loader must not rewrite the batch [loader-next]"
