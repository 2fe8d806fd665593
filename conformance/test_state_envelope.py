"""The state envelope's checks, their precedence, and the canonical fingerprint (SPEC.md,
"``ZephonDataLoader`` checkpoint state (single process)").

Corruptions and bad arguments are the suite's one library of them (``conformance/helpers/envelope.py``,
which the golden state scripts use too), applied to the backend's own bytes, so a test depends
only on the envelope layout of [state-envelope]. Fingerprints are computed here from literal
pipeline descriptions, with canonical JSON and ``hashlib`` only, and compared with what the
backend writes or names.
"""

from __future__ import annotations

import hashlib

import pytest
from zephon import Dataset, InMemoryShard, Pipeline, StaticMixtureWorkSource

from conformance.helpers.asserts import assert_raises
from conformance.helpers.corpus import CorpusTokenizer
from conformance.helpers.envelope import (
    BAD_ARGUMENTS,
    CHECKS,
    CORRUPTIONS,
    HEX64,
    MAGIC,
    VERSION,
    body_of,
    canonical_json,
    corrupt,
    envelope,
    version_of,
    with_version,
)
from conformance.helpers.pipelines import SpyPipeline, corpus_pipeline, index_pipeline, make_loader

ZEROS = "0" * 64  # a fingerprint no pipeline has


def saved_after(backend, pipeline, k: int) -> bytes:
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
    version byte is exactly 1; extra bytes are truncated; the body has exactly its keys."""
    data = corrupt(saved_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5), corruptions)
    spy = SpyPipeline(index_pipeline(scratch, 10, 2, "redistribute", batch_size=2, canonical_replicas=3))
    loader = make_loader(backend, spy)
    error = assert_raises(
        ValueError, (check,), loader.load_state_dict, {"zephon": data}, clause="state-load-validates-first"
    )
    named = named_checks(error)
    assert named == [check], (
        f"message {str(error)!r} names the checks {named}, but should name only {check!r}, the first that fails "
        "[state-load-validates-first]"
    )
    assert loader.state_dict() == {"zephon": b""}, "a rejected load must change nothing [state-load-validates-first]"
    assert spy.calls == {"iter": 0, "checkpoint": 0, "restore": 0}, (
        f"pipeline calls {spy.calls} during a rejected load, but should be none [state-load-validates-first]"
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-envelope", "state-load-validates-first", "state-exact-resume")
@pytest.mark.parametrize("version", [0, 2, 255])
def test_the_version_byte_is_exactly_one(backend, scratch, version):
    """Any version byte but 1 is rejected, also with a correct digest; the version is named."""
    saved = saved_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5)
    assert saved[: len(MAGIC)] == MAGIC and version_of(saved) == VERSION, f"header {saved[:9]!r} [state-envelope]"
    other = corrupt(with_version(saved, version), ["resign"])
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert_raises(
        ValueError,
        ("unsupported version", str(version)),
        loader.load_state_dict,
        {"zephon": other},
        clause="state-load-validates-first",
    )
    assert loader.state_dict() == {"zephon": b""}, "[state-load-validates-first]"
    loader.load_state_dict({"zephon": saved})
    assert list(loader) == [[i] for i in range(5, 10)], "a correct state still loads [state-exact-resume]"


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-validates-first", "state-envelope")
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
    assert named_checks(error) == ["bad magic"], (
        f"message {str(error)!r} should name only 'bad magic' [state-load-validates-first]"
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
    saved = saved_after(backend, index_pipeline(scratch / "saved", 10, 2, "redistribute"), 5)
    if kind == "argument":
        argument = BAD_ARGUMENTS[name]
    elif kind == "bytes":
        argument = {"zephon": CORRUPTIONS[name](saved) if name else saved}
    else:  # a valid state of another pipeline (a fingerprint mismatch before the start)
        argument = {
            "zephon": saved_after(backend, index_pipeline(scratch / "other", 10, 2, "redistribute", batch_size=2), 1)
        }
    loader = make_loader(backend, index_pipeline(scratch, 10, 2, "redistribute"))
    assert next(loader) == [0]
    assert_raises(RuntimeError, (), loader.load_state_dict, argument, clause="state-load-after-start")
    assert list(loader) == [[i] for i in range(1, 10)], (
        "a rejected load must not disturb the stream [state-load-after-start]"
    )


# --- the canonical fingerprint ----------------------------------------------------------


def fingerprint_of(stages: list[dict]) -> str:
    """sha256 hex of the canonical JSON of the description [state-fingerprint-canonical]."""
    return hashlib.sha256(canonical_json({"batchspec_fingerprint": 1, "stages": stages})).hexdigest()


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
    assert len(named) == 1, f"message {str(error)!r} should name the pipeline's fingerprint [state-fingerprint]"
    return named.pop()


def pack(op, max_length, algorithm, num_bins=None, pad_token_id=None):
    return {
        "op": op,
        "max_length": max_length,
        "algorithm": algorithm,
        "num_bins": num_bins,
        "pad_token_id": pad_token_id,
    }


def batch(batch_size, drop_last=True):
    return {"op": "batch", "batch_size": batch_size, "drop_last": drop_last}


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
        pack("pack_flat", seq_len + 1, "first_fit", 8, CorpusTokenizer.pad_token_id),
        batch(batch_size),
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


# name -> (pipeline builder, its stages)
PIPELINES = {
    "batch-1": (lambda s: index_pipeline(s, 16, 4, "redistribute"), [batch(1)]),
    "batch-2-runtime-and-topology": (
        lambda s: index_pipeline(s, 16, 4, "redistribute", batch_size=2, canonical_replicas=2, run_id="another"),
        [batch(2)],
    ),
    "shuffled-work-source": (lambda s: index_pipeline(s, 16, 4, "repeat", shuffle=True), [batch(1)]),
    "pack-wrap": (
        lambda s: index_pipeline(s, 16, 4, "redistribute", pack=(8, "wrap")),
        [pack("pack_flat", 8, "wrap"), batch(1)],
    ),
    "pack-first-fit": (
        lambda s: index_pipeline(s, 16, 4, "redistribute", pack=(8, "first_fit"), batch_size=2),
        [pack("pack_flat", 8, "first_fit", 4, 0), batch(2)],
    ),
    "corpus": (lambda s: corpus_pipeline(s, seq_len=128, batch_size=2, docs=16), corpus_stages(128, 2)),
    "other-stages": (
        other_stages_pipeline,
        [
            {"op": "map_transform"},
            {"op": "shuffle"},
            {"op": "add_op"},
            {"op": "stateful_transform"},
            pack("pack_sequences", 16, "first_fit", 2),
            batch(4, drop_last=False),
            {"op": "map_batch"},
        ],
    ),
}


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-fingerprint-canonical", "state-fingerprint")
@pytest.mark.parametrize("name", list(PIPELINES))
def test_fingerprint_is_the_sha256_of_the_canonical_description(backend, scratch, name):
    """The fingerprint a loader compares with is sha256 of the canonical JSON of
    {"batchspec_fingerprint": 1, "stages": [...]}, written here from the pipeline's builder
    calls: work source, prefetch and Zephon's own stages left out, runtime and topology
    options ignored, exactly the listed settings, unset ones null."""
    build, stages = PIPELINES[name]
    expected = fingerprint_of(stages)
    got = named_fingerprint(backend, build(scratch))
    assert got == expected, (
        f"fingerprint {got}, but should be {expected}, the sha256 of "
        f"{canonical_json({'batchspec_fingerprint': 1, 'stages': stages}).decode()} [state-fingerprint-canonical]"
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-fingerprint-canonical", "state-envelope", "state-exact-resume")
@pytest.mark.parametrize("name", ["pack-first-fit", "corpus"])
def test_saved_envelope_holds_the_canonical_fingerprint(backend, scratch, name):
    """After iteration (Zephon has built its engine and inserted its own stages), the
    envelope's fingerprint is still the canonical one, and the state resumes."""
    build, stages = PIPELINES[name]
    data = saved_after(backend, build(scratch / "saved"), 1)
    fingerprint = body_of(data)["fingerprint"]
    assert fingerprint == fingerprint_of(stages), (
        f"the envelope's fingerprint is {fingerprint}, but should be {fingerprint_of(stages)} "
        "[state-fingerprint-canonical]"
    )
    resumed = make_loader(backend, build(scratch / "resumed"))
    resumed.load_state_dict({"zephon": data})
    uninterrupted = make_loader(backend, build(scratch / "uninterrupted"))
    assert list(resumed)[:3] == list(uninterrupted)[1:4], "[state-exact-resume]"
