"""``ZephonDataLoader`` checkpoint state (SPEC.md, "``ZephonDataLoader`` checkpoint state
(single process)"), over real in-memory Zephon pipelines.

The index pipelines follow field reports F16/F17 (docs/sources.md#loader-state-setup): N
one-token rows, ``batch(1)``, inline runner without prefetch; ``convert_batch`` returns each batch's row indices, so the tests
compare streams without tensor conversion. One scenario resumes the real corpus pipeline
through ``convert_text_batch`` and compares tensors exactly.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from zephon import Dataset, InMemoryShard, Pipeline, StaticMixtureWorkSource

from batchspec.conformance.helpers.asserts import ClauseFailure, assert_batch_equal, assert_raises, check
from batchspec.conformance.helpers.corpus import CorpusTokenizer
from batchspec.conformance.helpers.envelope import (
    BAD_ARGUMENTS,
    BODY_KEYS,
    CHECKS,
    CORRUPTIONS,
    DIGEST,
    HEADER,
    HEX64,
    MAGIC,
    MUTATIONS,
    VERSION,
    body_length,
    body_of,
    canonical_json,
    corrupt,
    digest_matches,
    envelope,
    mutate,
    raw_body,
    version_of,
    with_version,
)
from batchspec.conformance.helpers.inputs import Contract
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.pipelines import (
    FINGERPRINT_PROBE,
    FINGERPRINT_PROBE_STAGES,
    SpyPipeline,
    batch_stage,
    check_exact_resume,
    corpus_pipeline,
    fingerprint_of,
    index_pipeline,
    make_loader,
    pack_stage,
)


def take(loader, k):
    return [next(loader) for _ in range(k)]


def saved_after(backend, scratch_dir, k, n=10, chunk_size=2, policy="redistribute", **kwargs):
    """F17's L1: the state after ``k`` batches."""
    loader = make_loader(backend, index_pipeline(scratch_dir, n, chunk_size, policy, **kwargs))
    take(loader, k)
    state = loader.state_dict()
    loader.close()
    return state


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
        f"state_dict()={state!r}, but should be {{'zephon': b''}} [state-before-start]",
        clause="state-before-start",
    )
    loader.load_state_dict({"zephon": b""})
    check(loader.state_dict() == {"zephon": b""}, "[state-load-empty]", clause="state-load-empty")
    check(
        spy.calls == {"iter": 0, "checkpoint": 0, "restore": 0},
        f"pipeline calls {spy.calls} before the first next(), but should be none [state-before-start]",
        clause="state-before-start",
    )
    check(
        list(loader) == [[i] for i in range(10)],
        "b'' on a fresh loader must change nothing [state-load-empty]",
        clause="state-load-empty",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-roundtrip", "state-exact-resume", "state-before-start", "state-after-start")
def test_load_then_state_dict_round_trips_and_resumes(backend, scratch):
    """F17: after 5 batches S is non-empty; a fresh loader loaded with S returns S and yields [5]..[9]."""
    saved = saved_after(backend, scratch, 5)
    check(
        isinstance(saved, dict) and list(saved) == ["zephon"],
        f"state_dict()={saved!r} [state-after-start]",
        clause="state-after-start",
    )
    check(
        isinstance(saved["zephon"], bytes) and saved["zephon"],
        "state after start must be non-empty bytes [state-after-start]",
        clause="state-after-start",
    )
    spy = SpyPipeline(index_pipeline(scratch, 10, 2, "redistribute"))
    loader = make_loader(backend, spy)
    loader.load_state_dict(saved)
    again = loader.state_dict()
    check(
        again == saved,
        "state_dict() right after a load must return exactly the loaded bytes [state-roundtrip]",
        clause="state-roundtrip",
    )
    check(
        spy.calls["iter"] == 0 and spy.calls["checkpoint"] == 0,
        f"pipeline calls {spy.calls} [state-before-start]",
        clause="state-before-start",
    )
    check(list(loader) == [[i] for i in range(5, 10)], "[state-exact-resume]", clause="state-exact-resume")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-iter-then-load", "state-exact-resume", "state-after-start")
def test_iter_then_load_resumes(backend, scratch):
    """F17: it = iter(L3); L3.load_state_dict(S); list(it) gives [5]..[9]."""
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    saved = saved_after(backend, scratch, 5)
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    iterator = iter(loader)
    loader.load_state_dict(saved)
    check(list(iterator) == [[i] for i in range(5, 10)], "[state-iter-then-load]", clause="state-iter-then-load")


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
        "a rejected load must not disturb the stream [state-load-after-start]",
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
    check(loader.state_dict() == second, "[state-roundtrip]", clause="state-roundtrip")
    check(list(loader) == [[7], [8], [9]], "the last load must win [state-load-twice]", clause="state-load-twice")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-after-start", "state-exact-resume")
def test_state_after_close_covers_returned_batches(backend, scratch):
    """A state taken after close() (mid-stream) resumes right after the last returned batch."""
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    take(loader, 3)
    loader.close()
    saved = loader.state_dict()
    check(
        saved["zephon"], "state after close() must be non-empty bytes [state-after-start]", clause="state-after-start"
    )
    resumed = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    resumed.load_state_dict(saved)
    check(list(resumed) == [[i] for i in range(3, 10)], "[state-after-start]", clause="state-after-start")


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
        "state after the last batch must be non-empty bytes [state-after-start]",
        clause="state-after-start",
    )
    resumed = make_loader(backend, index_pipeline(scratch, 4, 2, "redistribute"))
    resumed.load_state_dict(saved)
    check(resumed.state_dict() == saved, "[state-roundtrip]", clause="state-roundtrip")
    rest = list(resumed)
    check(
        rest == [],
        f"resuming an end-of-epoch state yielded {rest}, but should yield nothing [state-end-of-epoch]",
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
        f"resumed {got}, but should continue with {continuation} (pass 2, not pass 1 again) [state-exact-resume]",
        clause="state-exact-resume",
    )


# --- errors -------------------------------------------------------------------------------


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-errors")
@pytest.mark.parametrize(
    "name, error",
    [
        # item 1: not a mapping, or no "zephon" key; item 2: a "zephon" value that is not bytes
        *(
            pytest.param(
                name, error, marks=pytest.mark.clause(f"state-load-errors.{item}"), id=f"{name}-{error.__name__}"
            )
            for name, error, item in (
                ("empty_mapping", ValueError, 1),
                ("missing_key", ValueError, 1),
                ("list_of_pairs", ValueError, 1),
                ("bytes", ValueError, 1),
                ("none", ValueError, 1),
                ("str_value", TypeError, 2),
                ("none_value", TypeError, 2),
                ("bytearray_value", TypeError, 2),
            )
        )
    ],
)
def test_malformed_state_mapping_is_rejected(backend, scratch, name, error):
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert_raises(error, (), loader.load_state_dict, BAD_ARGUMENTS[name], clause="state-load-errors")
    check(
        loader.state_dict() == {"zephon": b""},
        "a rejected load must change nothing [state-load-errors]",
        clause="state-load-errors",
    )
    assert list(loader) == [[i] for i in range(10)]


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-empty", "state-after-start", "state-exact-resume")
def test_empty_state_after_a_non_empty_load_is_rejected(backend, scratch):
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    saved = saved_after(backend, scratch, 5)
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    loader.load_state_dict(saved)
    assert_raises(ValueError, (), loader.load_state_dict, {"zephon": b""}, clause="state-load-empty")
    assert loader.state_dict() == saved
    check(list(loader) == [[i] for i in range(5, 10)], "[state-load-empty]", clause="state-load-empty")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-fingerprint", "state-load-validates-first", "state-load-validates-first.6")
@pytest.mark.parametrize("other", [(6, "wrap"), (8, "first_fit")], ids=["max-length", "algorithm"])
def test_fingerprint_mismatch_names_both_fingerprints(backend, scratch, other):
    """A state saved by pack_flat(8, "wrap") does not load into another packing (Zephon
    would resume it into an empty stream)."""
    saved = saved_after(backend, scratch, 1, n=40, chunk_size=8, pack=(8, "wrap"))
    spy = SpyPipeline(index_pipeline(scratch, 40, 8, "redistribute", pack=other))
    loader = make_loader(backend, spy)
    # The check's name is a fact [state-load-validates-first]; so are both fingerprints.
    error = assert_raises(
        ValueError, ("fingerprint mismatch",), loader.load_state_dict, saved, clause="state-load-validates-first"
    )
    named = set(HEX64.findall(str(error)))
    check(
        len(named) == 2,
        f"message {str(error)!r} should name both sha256 fingerprints [state-fingerprint]",
        clause="state-fingerprint",
    )
    check(
        loader.state_dict() == {"zephon": b""},
        "a rejected load must change nothing [state-load-validates-first]",
        clause="state-load-validates-first",
    )
    check(
        spy.calls["restore"] == 0,
        "nothing may be restored from a rejected state [state-load-validates-first]",
        clause="state-load-validates-first",
    )
    check(
        len(list(loader)) > 0,
        "the loader must still run from the start [state-load-validates-first]",
        clause="state-load-validates-first",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-fingerprint", "state-exact-resume", "state-after-start")
def test_fingerprint_ignores_runtime_options(backend, scratch):
    """Runtime options (runner, prefetch, aggregate_dir, run_id) do not change the fingerprint."""
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    saved = saved_after(backend, scratch, 4)
    pipeline = index_pipeline(scratch / "other", 10, 2, "redistribute", run_id="another-run")
    loader = make_loader(backend, pipeline)
    loader.load_state_dict(saved)
    check(list(loader) == [[i] for i in range(4, 10)], "[state-fingerprint]", clause="state-fingerprint")


_SUBPROCESS = """
import json, os, sys
from batchspec.conformance.backends import load_backend
from batchspec.conformance.test_loader_state import index_pipeline, make_loader, take
backend = load_backend({backend!r})
loader = make_loader(backend, index_pipeline({scratch!r}, 40, 8, "redistribute", pack=(8, "wrap")))
take(loader, 2)
sys.stdout.write(loader.state_dict()["zephon"].hex())
"""


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-fingerprint", "state-envelope", "state-exact-resume")
def test_state_is_identical_across_processes(backend, scratch):
    """Two processes with different hash seeds save byte-identical states, which load here."""
    outputs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, ZEPHON_CATALOG_DIR=str(scratch / f"catalog{seed}"))
        code = _SUBPROCESS.format(backend=backend.name, scratch=str(scratch / f"p{seed}"))
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.append(bytes.fromhex(done.stdout.strip()))
    check(
        outputs[0] == outputs[1],
        "equal states saved in two processes must be equal bytes [state-envelope, state-fingerprint]",
        clause="state-envelope, state-fingerprint",
    )
    here = make_loader(backend, index_pipeline(scratch, 40, 8, "redistribute", pack=(8, "wrap")))
    uninterrupted = make_loader(backend, index_pipeline(scratch, 40, 8, "redistribute", pack=(8, "wrap")))
    here.load_state_dict({"zephon": outputs[0]})
    check(list(here) == list(uninterrupted)[2:], "[state-exact-resume]", clause="state-exact-resume")


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause(
    "state-canonical-replicas",
    "state-load-validates-first",
    "state-load-validates-first.7",
    "state-after-start",
    "state-exact-resume",
)
def test_canonical_replicas_change_names_both_values(backend, scratch):
    check_exact_resume(backend, scratch)  # the plain resume first: its failure is its own clauses'
    saved = saved_after(backend, scratch, 2, n=12, canonical_replicas=2)
    loader = make_loader(backend, index_pipeline(scratch, 12, 2, "redistribute", canonical_replicas=3))
    assert_raises(
        ValueError, ("canonical_replicas changed",), loader.load_state_dict, saved, clause="state-load-validates-first"
    )
    assert_raises(ValueError, (2, 3), loader.load_state_dict, saved, clause="state-canonical-replicas")
    check(loader.state_dict() == {"zephon": b""}, "[state-load-validates-first]", clause="state-load-validates-first")
    same = make_loader(backend, index_pipeline(scratch, 12, 2, "redistribute", canonical_replicas=2))
    same.load_state_dict(saved)
    check(
        len(list(same)) == 10,
        "the same canonical_replicas resumes the remaining 10 rows [state-canonical-replicas]",
        clause="state-canonical-replicas",
    )


# --- envelope -----------------------------------------------------------------------------


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-envelope", "state-load-validates-first", "state-exact-resume")
@pytest.mark.parametrize(
    "corruption, check",
    [
        # loaded into the pipeline that saved it: the tampering is the only fault, so each
        # parameter cites the [state-load-validates-first] item of its check
        pytest.param(
            corruption,
            check,
            marks=pytest.mark.clause(f"state-load-validates-first.{CHECKS.index(check) + 1}"),
            id=f"{corruption}-{check.replace(' ', '-')}",
        )
        for corruption, check in (
            ("flip_body_byte", "checksum mismatch"),
            ("drop_last_byte", "truncated"),
            ("cut_header", "truncated"),
            ("extra_byte", "truncated"),
            ("bad_magic", "bad magic"),
            ("version_2", "unsupported version"),
            ("body_not_json", "malformed body"),
            ("body_only_state", "malformed body"),
            ("topology_replicas_as_string", "malformed body"),
        )
    ],
)
def test_tampered_envelope_is_rejected_by_name(backend, scratch, corruption, check):
    saved = saved_after(backend, scratch, 5)
    data = saved["zephon"]
    if not (data[: len(MAGIC)] == MAGIC and version_of(data) == VERSION):
        raise ClauseFailure("envelope header [state-envelope]", "state-envelope")
    if not len(data) == HEADER + body_length(data) + DIGEST:
        raise ClauseFailure("[state-envelope]", "state-envelope")
    if not digest_matches(data):
        raise ClauseFailure("digest of everything before it [state-envelope]", "state-envelope")
    body = raw_body(data)
    if not body == canonical_json(json.loads(body)):
        raise ClauseFailure("the body must be canonical JSON [state-envelope]", "state-envelope")
    if not sorted(json.loads(body)) == list(BODY_KEYS):
        raise ClauseFailure("[state-envelope]", "state-envelope")

    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    # The message contains the failed check's name [state-load-validates-first]; the rest of it is free.
    assert_raises(
        ValueError,
        (check,),
        loader.load_state_dict,
        {"zephon": corrupt(data, [corruption])},
        clause="state-load-validates-first",
    )
    if not loader.state_dict() == {"zephon": b""}:
        raise ClauseFailure("[state-load-validates-first]", "state-load-validates-first")
    loader.load_state_dict(saved)
    if not list(loader) == [[i] for i in range(5, 10)]:
        raise ClauseFailure(
            "a correct state still loads and resumes exactly [state-exact-resume]", "state-exact-resume"
        )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-validates-first", "state-envelope", "state-exact-resume")
def test_random_and_mutated_bytes_raise_only_value_error(backend, scratch):
    """Random bytes and flips, truncations, insertions and splices of a valid state raise
    only ValueError; afterwards the same loader accepts the valid state and resumes exactly."""
    saved = saved_after(backend, scratch, 5)
    valid = saved["zephon"]
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))

    @given(
        st.one_of(st.binary(max_size=200), st.lists(MUTATIONS, min_size=1, max_size=4).map(lambda m: mutate(valid, m)))
    )
    def feed(data):
        if data == valid:
            return
        try:
            loader.load_state_dict({"zephon": data})
        except ValueError:
            pass
        except Exception as error:
            raise ClauseFailure(
                f"{len(data)} mutated bytes raised {type(error).__name__}({error}), but only ValueError is allowed "
                "[state-load-validates-first]",
                "state-load-validates-first",
            ) from error
        else:
            check(
                data == b"",
                f"{data[:40]!r}... was accepted, but should be rejected [state-envelope]",
                clause="state-envelope",
            )
        check(
            loader.state_dict() == {"zephon": b""},
            "a rejected load must change nothing [state-load-validates-first]",
            clause="state-load-validates-first",
        )

    feed()
    loader.load_state_dict(saved)
    check(list(loader) == [[i] for i in range(5, 10)], "[state-exact-resume]", clause="state-exact-resume")


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
    check(resumed.state_dict() == saved, "[state-roundtrip]", clause="state-roundtrip")
    for k, want in enumerate(expected):
        got = next(resumed)
        check(
            list(got) == list(want),
            f"batch {4 + k}: keys {list(got)}, but should be {list(want)} [state-exact-resume]",
            clause="state-exact-resume",
        )
        assert_batch_equal(got, want, clause="state-exact-resume", call=f"batch {4 + k} after resume")
    resumed.close()


# --- The state envelope's checks, their precedence, and the canonical fingerprint (SPEC.md, ----


ZEROS = "0" * 64  # a fingerprint no pipeline has


def envelope_after(backend, pipeline, k: int) -> bytes:
    loader = make_loader(backend, pipeline)
    for _ in range(k):
        next(loader)
    data = loader.state_dict()["zephon"]
    loader.close()
    return data


def named_checks(error: BaseException) -> list[str]:
    """The [state-load-validates-first] checks a message names."""
    return [check for check in CHECKS if check in str(error)]


# --- the checks and their order ---------------------------------------------------------

# (corruptions of a valid state, applied in order; the check that must be reported). Each
# row's bytes fail the reported check and, where a corruption adds one, later checks too;
# loaded into a batch(2) pipeline with canonical_replicas=3, every state that passes the
# envelope checks also fails "fingerprint mismatch" and "canonical_replicas changed".
FIRST_FAILED_CHECK = [
    (("bad_magic",), "bad magic"),
    (("version_2", "bad_magic", "drop_last_byte"), "bad magic"),
    (("foreign",), "bad magic"),
    (("short_foreign",), "bad magic"),
    (("magic_only",), "unsupported version"),
    (("version_0",), "unsupported version"),
    (("version_0", "resign"), "unsupported version"),
    (("version_2", "resign"), "unsupported version"),
    (("version_2", "drop_last_byte"), "unsupported version"),
    (("version_0", "extra_byte"), "unsupported version"),
    (("drop_last_byte",), "truncated"),
    (("cut_header",), "truncated"),
    (("extra_byte",), "truncated"),
    (("flip_body_byte", "drop_last_byte"), "truncated"),
    (("flip_body_byte",), "checksum mismatch"),
    (("body_not_json", "flip_digest_byte"), "checksum mismatch"),
    (("body_not_json",), "malformed body"),
    (("body_not_object",), "malformed body"),
    (("body_without_state",), "malformed body"),
    (("body_extra_key",), "malformed body"),
    (("topology_extra_key",), "malformed body"),
    (("topology_replicas_as_string",), "malformed body"),
    (("topology_world_size_0",), "malformed body"),
    (("state_nan",), "malformed body"),
    (("body_duplicate_key",), "malformed body"),
    (("fingerprint_not_string",), "malformed body"),
    (("state_not_object",), "malformed body"),
    (("topology_not_object",), "malformed body"),
    ((), "fingerprint mismatch"),
]


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-validates-first", "state-envelope")
@pytest.mark.parametrize(
    "corruptions, check", FIRST_FAILED_CHECK, ids=["+".join(c) or "other-pipeline" for c, _ in FIRST_FAILED_CHECK]
)
def test_the_first_failed_check_is_reported(backend, scratch, corruptions, check):
    """Checks run in the order bad magic, unsupported version, truncated, checksum mismatch,
    malformed body, fingerprint mismatch, canonical_replicas changed; the message names the
    first that fails, and only it. Foreign bytes are a bad magic whatever their length; the
    version byte is exactly 1; extra bytes are truncated; the body has exactly its keys, of
    their types, in strict JSON (no NaN, no duplicate key)."""
    data = corrupt(envelope_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5), corruptions)
    spy = SpyPipeline(index_pipeline(scratch, 10, 2, "redistribute", batch_size=2, canonical_replicas=3))
    loader = make_loader(backend, spy)
    error = assert_raises(
        ValueError, (check,), loader.load_state_dict, {"zephon": data}, clause="state-load-validates-first"
    )
    named = named_checks(error)
    if not named == [check]:
        raise ClauseFailure(
            f"message {str(error)!r} names the checks {named}, but should name only {check!r}, the first that fails "
            "[state-load-validates-first]",
            "state-load-validates-first",
        )
    if not loader.state_dict() == {"zephon": b""}:
        raise ClauseFailure(
            "a rejected load must change nothing [state-load-validates-first]", "state-load-validates-first"
        )
    if not spy.calls == {"iter": 0, "checkpoint": 0, "restore": 0}:
        raise ClauseFailure(
            f"pipeline calls {spy.calls} during a rejected load, but should be none [state-load-validates-first]",
            "state-load-validates-first",
        )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause(
    "state-envelope", "state-load-validates-first", "state-load-validates-first.2", "state-exact-resume"
)
@pytest.mark.parametrize("version", [0, 2, 255])
def test_the_version_byte_is_exactly_one(backend, scratch, version):
    """Any version byte but 1 is rejected, also with a correct digest; the version is named."""
    saved = envelope_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5)
    check(
        saved[: len(MAGIC)] == MAGIC and version_of(saved) == VERSION,
        f"header {saved[:9]!r} [state-envelope]",
        clause="state-envelope",
    )
    other = corrupt(with_version(saved, version), ["resign"])
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert_raises(
        ValueError,
        ("unsupported version", str(version)),
        loader.load_state_dict,
        {"zephon": other},
        clause="state-load-validates-first",
    )
    check(loader.state_dict() == {"zephon": b""}, "[state-load-validates-first]", clause="state-load-validates-first")
    loader.load_state_dict({"zephon": saved})
    check(
        list(loader) == [[i] for i in range(5, 10)],
        "a correct state still loads [state-exact-resume]",
        clause="state-exact-resume",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-validates-first", "state-load-validates-first.1", "state-envelope")
@pytest.mark.parametrize(
    "data",
    [b"\x01" * 100, b"PK\x03\x04" + bytes(60), b"\x80\x04\x95" + bytes(60), b"{}", b"BSZ"],
    ids=["ones", "zip", "pickle", "json", "short-magic"],
)
def test_foreign_bytes_are_a_bad_magic(backend, scratch, data):
    """Bytes that do not start with the magic are reported as ``bad magic``, not by what their
    would-be length field says."""
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    error = assert_raises(
        ValueError, ("bad magic",), loader.load_state_dict, {"zephon": data}, clause="state-load-validates-first"
    )
    check(
        named_checks(error) == ["bad magic"],
        f"message {str(error)!r} should name only 'bad magic' [state-load-validates-first]",
        clause="state-load-validates-first",
    )


# --- load_state_dict after the start: RuntimeError first ---------------------------------

AFTER_START = [
    *(("argument", name) for name in BAD_ARGUMENTS),
    *(("bytes", name) for name in ("foreign", "version_0", "drop_last_byte", "flip_body_byte", "body_not_json", "")),
    ("other-pipeline", ""),
]


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-after-start", "state-load-errors", "state-load-validates-first")
@pytest.mark.parametrize("kind, name", AFTER_START, ids=[f"{k}-{n or 'valid'}" for k, n in AFTER_START])
def test_after_the_start_every_load_is_a_runtime_error(backend, scratch, kind, name):
    """After the first next(), load_state_dict raises RuntimeError whatever it is given: the
    [state-load-after-start] check comes before [state-load-errors] and the envelope checks."""
    saved = envelope_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5)
    if kind == "argument":
        argument = BAD_ARGUMENTS[name]
    elif kind == "bytes":
        argument = {"zephon": CORRUPTIONS[name](saved) if name else saved}
    else:  # a valid state of another pipeline (a fingerprint mismatch before the start)
        argument = {
            "zephon": envelope_after(backend, index_pipeline(scratch / "other", 10, 2, "redistribute", batch_size=2), 1)
        }
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert next(loader) == [0]
    assert_raises(RuntimeError, (), loader.load_state_dict, argument, clause="state-load-after-start")
    check(
        list(loader) == [[i] for i in range(1, 10)],
        "a rejected load must not disturb the stream [state-load-after-start]",
        clause="state-load-after-start",
    )


# --- the canonical fingerprint ----------------------------------------------------------


def named_fingerprint(backend, pipeline) -> str:
    """The backend's fingerprint of ``pipeline`` as its ``fingerprint mismatch`` error names
    it, for a valid envelope saved under a fingerprint of zeros (nothing is iterated)."""
    body = canonical_json(
        {"fingerprint": ZEROS, "state": {}, "topology": {"world_size": 1, "dp_degree": 1, "canonical_replicas": 1}}
    )
    loader = make_loader(backend, pipeline)
    error = assert_raises(
        ValueError,
        ("fingerprint mismatch", ZEROS),
        loader.load_state_dict,
        {"zephon": envelope(body)},
        clause="state-fingerprint",
    )
    named = set(HEX64.findall(str(error))) - {ZEROS}
    check(
        len(named) == 1,
        f"message {str(error)!r} should name the pipeline's fingerprint [state-fingerprint]",
        clause="state-fingerprint",
    )
    return named.pop()


def corpus_stages(seq_len, batch_size):
    """``corpus_pipeline``'s stages: tokenize with the committed BPE, pack_flat, batch."""
    tokenizer = {
        key: getattr(CorpusTokenizer, key)
        for key in ("name_or_path", "vocab_size", "bos_token_id", "eos_token_id", "pad_token_id")
    }
    return [
        {
            "op": "tokenize",
            "field": "text",
            "max_length": seq_len + 1,
            "special_tokens": "bos_eos",
            "split_long_samples": True,
            "add_attention_mask": False,
            "tokenizer": tokenizer,
        },
        pack_stage("pack_flat", seq_len + 1, "first_fit", 8, CorpusTokenizer.pad_token_id),
        batch_stage(batch_size),
    ]


def other_stages_pipeline(scratch):
    """prefetch, map_transform, shuffle, add_op, stateful_transform, pack_sequences,
    batch(drop_last=False), map_batch: stages with no settings, one left out, one unset."""
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


def tokenize_pipeline(scratch, **tokenizer):
    """tokenize (given ``tokenizer_id``, or neither a tokenizer nor an id), then batch; nothing is
    iterated, so Zephon never loads a tokenizer."""
    dataset = Dataset.from_dict("d", {0: InMemoryShard([{"text": "a b"}])})
    work_source = StaticMixtureWorkSource([dataset], {"d": 1.0}, chunk_size=4, seed=0, exhausted_policy="redistribute")
    return (
        Pipeline(work_source)
        .tokenize(field="text", max_length=32, special_tokens="eos", split_long_samples=True, **tokenizer)
        .batch(2)
        .options(runner="inline", aggregate_dir=str(scratch / "aggregate"))
    )


def tokenize_stage(tokenizer):
    return {
        "op": "tokenize",
        "field": "text",
        "max_length": 32,
        "special_tokens": "eos",
        "split_long_samples": True,
        "add_attention_mask": True,
        "tokenizer": tokenizer,
    }


# name -> (pipeline builder, its stages)
PIPELINES = {
    "batch-1": (lambda s: index_pipeline(s, 16, 4, "redistribute"), [batch_stage(1)]),
    "batch-2-runtime-and-topology": (
        lambda s: index_pipeline(s, 16, 4, "redistribute", batch_size=2, canonical_replicas=2, run_id="another"),
        [batch_stage(2)],
    ),
    "shuffled-work-source": (lambda s: index_pipeline(s, 16, 4, "repeat", shuffle=True), [batch_stage(1)]),
    "pack-wrap": (
        lambda s: index_pipeline(s, 16, 4, "redistribute", pack=(8, "wrap")),
        [pack_stage("pack_flat", 8, "wrap"), batch_stage(1)],
    ),
    "pack-first-fit": (lambda s: index_pipeline(s, **FINGERPRINT_PROBE), FINGERPRINT_PROBE_STAGES),
    "corpus": (lambda s: corpus_pipeline(s, seq_len=128, batch_size=2, docs=16), corpus_stages(128, 2)),
    "tokenizer-id": (
        lambda s: tokenize_pipeline(s, tokenizer_id="__fallback__"),
        [
            tokenize_stage(
                {
                    "name_or_path": "__fallback__",
                    "vocab_size": None,
                    "bos_token_id": None,
                    "eos_token_id": None,
                    "pad_token_id": None,
                }
            ),
            batch_stage(2),
        ],
    ),
    "tokenize-without-tokenizer": (tokenize_pipeline, [tokenize_stage(None), batch_stage(2)]),
    "other-stages": (
        other_stages_pipeline,
        [
            {"op": "map_transform"},
            {"op": "shuffle"},
            {"op": "add_op"},
            {"op": "stateful_transform"},
            pack_stage("pack_sequences", 16, "first_fit", 2),
            batch_stage(4, drop_last=False),
            {"op": "map_batch"},
        ],
    ),
}


# The [state-fingerprint-canonical] item that lists a stage's settings, by the stage's op (item 4:
# any other stage, with no setting).
STAGE_ITEM = {"tokenize": 1, "pack_flat": 2, "pack_sequences": 2, "batch": 3}


def pipeline_param(name: str):
    """``name`` of PIPELINES, citing the [state-fingerprint-canonical] items of its stages (every
    loader pipeline ends in ``batch``, item 3, so items 1, 2 and 4 are never alone)."""
    items = sorted({STAGE_ITEM.get(stage["op"], 4) for stage in PIPELINES[name][1]})
    return pytest.param(
        name, marks=pytest.mark.clause(*(f"state-fingerprint-canonical.{item}" for item in items)), id=name
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-fingerprint-canonical", "state-fingerprint")
@pytest.mark.parametrize("name", [pipeline_param(name) for name in PIPELINES])
def test_fingerprint_is_the_sha256_of_the_canonical_description(backend, scratch, name):
    """The fingerprint a loader compares with is sha256 of the canonical JSON of
    {"batchspec_fingerprint": 1, "stages": [...]}, written here from the pipeline's builder
    calls: work source, prefetch and Zephon's own stages left out, runtime and topology
    options ignored, exactly the listed settings, unset ones null."""
    build, stages = PIPELINES[name]
    expected = fingerprint_of(stages)
    got = named_fingerprint(backend, build(scratch))
    check(
        got == expected,
        f"fingerprint {got}, but should be {expected}, the sha256 of "
        f"{canonical_json({'batchspec_fingerprint': 1, 'stages': stages}).decode()} [state-fingerprint-canonical]",
        clause="state-fingerprint-canonical",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-fingerprint-canonical", "state-envelope", "state-exact-resume")
@pytest.mark.parametrize("name", [pipeline_param("pack-first-fit"), pipeline_param("corpus")])
def test_saved_envelope_holds_the_canonical_fingerprint(backend, scratch, name):
    """After iteration (Zephon has built its engine and inserted its own stages), the
    envelope's fingerprint is still the canonical one, and the state resumes."""
    build, stages = PIPELINES[name]
    data = envelope_after(backend, build(scratch / "saved"), 1)
    fingerprint = body_of(data)["fingerprint"]
    check(
        fingerprint == fingerprint_of(stages),
        f"the envelope's fingerprint is {fingerprint}, but should be {fingerprint_of(stages)} "
        "[state-fingerprint-canonical]",
        clause="state-fingerprint-canonical",
    )
    resumed = make_loader(backend, build(scratch / "resumed"))
    resumed.load_state_dict({"zephon": data})
    uninterrupted = make_loader(backend, build(scratch / "uninterrupted"))
    check(list(resumed)[:3] == list(uninterrupted)[1:4], "[state-exact-resume]", clause="state-exact-resume")
