"""``ZephonDataLoader`` checkpoint state, saved and resumed (SPEC.md, "``ZephonDataLoader``
checkpoint state (single process)"): before and after the start, round trips, loading after
``iter``, twice or after the start, the end of an epoch and endless streams, over real
in-memory Zephon pipelines.

The index pipelines follow field reports F16/F17 (docs/sources.md#loader-state-setup): N
one-token rows, ``batch(1)``, inline runner without prefetch; ``convert_batch`` returns each
batch's row indices, so the tests compare streams without tensor conversion. One scenario
resumes the real corpus pipeline through ``convert_text_batch`` and compares tensors exactly.
The state's validation: test_checkpoint_validation.py; its fingerprint:
test_checkpoint_fingerprint.py; across ranks: test_checkpoint_ranks.py.
"""

from __future__ import annotations

import functools

import pytest

from batchspec.conformance.helpers.asserts import assert_batch_equal, assert_raises, check
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.pipelines import (
    SpyPipeline,
    check_exact_resume,
    corpus_pipeline,
    index_pipeline,
    make_loader,
    saved_after,
    take,
)
from batchspec.conformance.helpers.sample_batches import Contract

# --- F17: before start, round trip, iter then load, load after start ------------------------


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-before-start", "state-load-empty", "state-iter-then-load")
def test_state_before_start_is_empty_and_builds_nothing(backend, scratch):
    """F17: state_dict() before next() is {"zephon": b""}; iter() and loading b"" start nothing."""
    spy = SpyPipeline(index_pipeline(scratch, 10, 2, "redistribute"))
    loader = make_loader(backend, spy)
    assert iter(loader) is loader
    state = loader.state_dict()
    check(
        state == {"zephon": b""},
        f"state_dict()={state!r}, but should be {{'zephon': b''}}",
        clause="state-before-start",
    )
    loader.load_state_dict({"zephon": b""})
    check(loader.state_dict() == {"zephon": b""}, "", clause="state-load-empty")
    check(
        spy.calls == {"iter": 0, "checkpoint": 0, "restore": 0},
        f"pipeline calls {spy.calls} before the first next(), but should be none",
        clause="state-before-start",
    )
    check(
        list(loader) == [[i] for i in range(10)],
        "b'' on a fresh loader must change nothing",
        clause="state-load-empty",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-roundtrip", "state-exact-resume", "state-before-start", "state-after-start")
def test_load_then_state_dict_round_trips_and_resumes(backend, scratch):
    """F17: after 5 batches S is non-empty; a fresh loader loaded with S returns S and yields [5]..[9]."""
    saved = saved_after(backend, scratch, 5)
    check(
        isinstance(saved, dict) and list(saved) == ["zephon"],
        f"state_dict()={saved!r}",
        clause="state-after-start",
    )
    check(
        isinstance(saved["zephon"], bytes) and saved["zephon"],
        "state after start must be non-empty bytes",
        clause="state-after-start",
    )
    spy = SpyPipeline(index_pipeline(scratch, 10, 2, "redistribute"))
    loader = make_loader(backend, spy)
    loader.load_state_dict(saved)
    again = loader.state_dict()
    check(
        again == saved,
        "state_dict() right after a load must return exactly the loaded bytes",
        clause="state-roundtrip",
    )
    check(
        spy.calls["iter"] == 0 and spy.calls["checkpoint"] == 0,
        f"pipeline calls {spy.calls}",
        clause="state-before-start",
    )
    check(list(loader) == [[i] for i in range(5, 10)], "", clause="state-exact-resume")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-iter-then-load", "state-exact-resume", "state-after-start")
def test_iter_then_load_resumes(backend, scratch):
    """F17: it = iter(L3); L3.load_state_dict(S); list(it) gives [5]..[9]."""
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    saved = saved_after(backend, scratch, 5)
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    iterator = iter(loader)
    loader.load_state_dict(saved)
    check(list(iterator) == [[i] for i in range(5, 10)], "", clause="state-iter-then-load")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-after-start")
@pytest.mark.parametrize("which", ["saved", "empty"])
def test_load_after_next_raises_runtime_error(backend, scratch, which):
    """F17: loading anything after the first next() raises RuntimeError; the stream goes on."""
    saved = saved_after(backend, scratch, 5) if which == "saved" else {"zephon": b""}
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert next(loader) == [0]
    assert_raises(RuntimeError, (), loader.load_state_dict, saved, clause="state-load-after-start")
    check(
        next(loader) == [1],
        "a rejected load must not disturb the stream",
        clause="state-load-after-start",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-twice", "state-roundtrip", "state-after-start", "state-exact-resume")
def test_loading_twice_the_last_wins(backend, scratch):
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    first, second = saved_after(backend, scratch, 2), saved_after(backend, scratch, 7)
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    loader.load_state_dict(first)
    loader.load_state_dict(second)
    check(loader.state_dict() == second, "", clause="state-roundtrip")
    check(list(loader) == [[7], [8], [9]], "the last load must win", clause="state-load-twice")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-after-start", "state-exact-resume")
def test_state_after_close_covers_returned_batches(backend, scratch):
    """A state taken after close() (mid-stream) resumes right after the last returned batch."""
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    take(loader, 3)
    loader.close()
    saved = loader.state_dict()
    check(saved["zephon"], "state after close() must be non-empty bytes", clause="state-after-start")
    resumed = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    resumed.load_state_dict(saved)
    check(list(resumed) == [[i] for i in range(3, 10)], "", clause="state-after-start")


# --- F16: end of epoch, endless streams ---------------------------------------------------


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-end-of-epoch", "state-roundtrip", "state-after-start", "state-exact-resume")
@pytest.mark.parametrize("when", ["after-stop-iteration", "after-last-batch"])
def test_end_of_epoch_state_does_not_replay(backend, scratch, when):
    """F16 finite: N=4, redistribute, c=2; resuming the final state yields nothing."""
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    loader = make_loader(backend, index_pipeline(scratch, 4, 2, "redistribute"))
    if when == "after-stop-iteration":
        assert list(loader) == [[0], [1], [2], [3]]
    else:
        assert take(loader, 4) == [[0], [1], [2], [3]]
    saved = loader.state_dict()
    check(
        saved["zephon"],
        "state after the last batch must be non-empty bytes",
        clause="state-after-start",
    )
    resumed = make_loader(backend, index_pipeline(scratch, 4, 2, "redistribute"))
    resumed.load_state_dict(saved)
    check(resumed.state_dict() == saved, "", clause="state-roundtrip")
    rest = list(resumed)
    check(
        rest == [],
        f"resuming an end-of-epoch state yielded {rest}, but should yield nothing",
        clause="state-end-of-epoch",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-exact-resume", "state-end-of-epoch")
@pytest.mark.parametrize(
    "shuffle, first_pass, continuation",
    [
        (False, [0, 1, 2, 3], [0, 1, 2, 3, 0, 1, 2, 3]),
        (True, [2, 0, 1, 3], [2, 0, 3, 1, 1, 3, 2, 0]),
    ],
    ids=["no-shuffle", "shuffle-within-shard"],
)
def test_endless_stream_resumes_after_one_pass(backend, scratch, shuffle, first_pass, continuation):
    """F16 endless: N=4, repeat, c=4; save after one pass; the next 8 batches are 5..12."""
    loader = make_loader(backend, index_pipeline(scratch, 4, 4, "repeat", shuffle=shuffle))
    assert take(loader, 4) == [[i] for i in first_pass]
    saved = loader.state_dict()
    assert take(loader, 8) == [[i] for i in continuation], "# sanity: the uninterrupted run"
    resumed = make_loader(backend, index_pipeline(scratch, 4, 4, "repeat", shuffle=shuffle))
    resumed.load_state_dict(saved)
    got = take(resumed, 8)
    check(
        got == [[i] for i in continuation],
        f"resumed {got}, but should continue with {continuation} (pass 2, not pass 1 again)",
        clause="state-exact-resume",
    )


# --- the real corpus pipeline and convert_text_batch ---------------------------------------


@pytest.mark.requires("zephon_loader", "zephon_state", "convert_text_batch")
@pytest.mark.clause("state-exact-resume", "state-after-start", "state-roundtrip")
def test_corpus_pipeline_resumes_exactly(backend, scratch):
    """Save after k=3 batches of the tokenized, packed corpus; a fresh loader continues the
    uninterrupted run batch for batch, tensors equal exactly."""
    convert = functools.partial(
        backend.convert_text_batch,
        packing_contract=Contract(),
        ignore_index=IGNORE_INDEX,
        mask_segment_starts=True,
        allow_cross_document_attention=False,
    )

    def loader():
        pipeline = corpus_pipeline(scratch, seq_len=128, batch_size=2, exhausted_policy="repeat")
        return backend.ZephonDataLoader(pipeline, convert, packing_contract=Contract())

    first = loader()
    take(first, 3)
    saved = first.state_dict()
    expected = take(first, 5)
    first.close()

    resumed = loader()
    resumed.load_state_dict(saved)
    check(resumed.state_dict() == saved, "", clause="state-roundtrip")
    for k, want in enumerate(expected):
        got = next(resumed)
        check(
            list(got) == list(want),
            f"batch {4 + k}: keys {list(got)}, but should be {list(want)}",
            clause="state-exact-resume",
        )
        assert_batch_equal(got, want, clause="state-exact-resume", call=f"batch {4 + k} after resume")
    resumed.close()
