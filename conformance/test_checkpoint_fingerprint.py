"""The pipeline fingerprint of ``ZephonDataLoader``'s checkpoint state (SPEC.md,
"``ZephonDataLoader`` checkpoint state (single process)"): a mismatch names both fingerprints,
runtime options do not change it, two processes save identical bytes, and it is the sha256 of
the pipeline's canonical description [state-fingerprint-canonical].

The index pipelines follow field reports F16/F17 (docs/sources.md#loader-state-setup).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from zephon import Dataset, InMemoryShard, Pipeline, StaticMixtureWorkSource

from batchspec.conformance.helpers.asserts import assert_raises, check
from batchspec.conformance.helpers.corpus import CorpusTokenizer
from batchspec.conformance.helpers.envelope import (
    HEX64,
    body_of,
    canonical_json,
    envelope,
)
from batchspec.conformance.helpers.pipelines import (
    FINGERPRINT_PROBE,
    FINGERPRINT_PROBE_STAGES,
    SpyPipeline,
    batch_stage,
    check_exact_resume,
    corpus_pipeline,
    envelope_after,
    fingerprint_of,
    index_pipeline,
    make_loader,
    other_stages_pipeline,
    pack_stage,
    saved_after,
)


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
        f"message {str(error)!r} should name both sha256 fingerprints",
        clause="state-fingerprint",
    )
    check(
        loader.state_dict() == {"zephon": b""},
        "a rejected load must change nothing",
        clause="state-load-validates-first",
    )
    check(
        spy.calls["restore"] == 0,
        "nothing may be restored from a rejected state",
        clause="state-load-validates-first",
    )
    check(
        len(list(loader)) > 0,
        "the loader must still run from the start",
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
    check(list(loader) == [[i] for i in range(4, 10)], "", clause="state-fingerprint")


_SUBPROCESS = """
import json, os, sys
from batchspec.conformance.run.backends import load_backend
from batchspec.conformance.helpers.pipelines import index_pipeline, make_loader, take
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
        "equal states saved in two processes must be equal bytes",
        clause="state-envelope, state-fingerprint",
    )
    here = make_loader(backend, index_pipeline(scratch, 40, 8, "redistribute", pack=(8, "wrap")))
    uninterrupted = make_loader(backend, index_pipeline(scratch, 40, 8, "redistribute", pack=(8, "wrap")))
    here.load_state_dict({"zephon": outputs[0]})
    check(list(here) == list(uninterrupted)[2:], "", clause="state-exact-resume")


ZEROS = "0" * 64  # a fingerprint no pipeline has


# --- the canonical fingerprint ----------------------------------------------------------


def named_fingerprint(backend, pipeline, scratch) -> str:
    """The backend's fingerprint of ``pipeline`` as its ``fingerprint mismatch`` error names
    it, for a valid envelope whose fingerprint was replaced by zeros (``pipeline`` is not
    iterated). Its ``state`` is a checkpoint the backend saved (after one batch of a small index
    pipeline), so a check of the state's structure [state-body-valid] passes it on to the
    fingerprint's."""
    saved = body_of(envelope_after(backend, index_pipeline(scratch / "probe-state", 4, 2, "redistribute"), 1))
    body = canonical_json({**saved, "fingerprint": ZEROS})
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
        f"message {str(error)!r} should name the pipeline's fingerprint",
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
    got = named_fingerprint(backend, build(scratch), scratch)
    check(
        got == expected,
        f"fingerprint {got}, but should be {expected}, the sha256 of "
        f"{canonical_json({'batchspec_fingerprint': 1, 'stages': stages}).decode()}",
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
        f"the envelope's fingerprint is {fingerprint}, but should be {fingerprint_of(stages)}",
        clause="state-fingerprint-canonical",
    )
    resumed = make_loader(backend, build(scratch / "resumed"))
    resumed.load_state_dict({"zephon": data})
    uninterrupted = make_loader(backend, build(scratch / "uninterrupted"))
    check(list(resumed)[:3] == list(uninterrupted)[1:4], "", clause="state-exact-resume")
