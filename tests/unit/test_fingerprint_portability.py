"""State bytes are portable between conformant backends ([state-fingerprint-canonical]).

``tests/probe_backends/canonical_fingerprint_backend.py`` implements the canonical fingerprint a
second time, independently of ``batchspec.reference.checkpoint`` (stages found by node name, JSON
written by hand). These tests show that both give the same digest on several pipelines, the
digest the golden case pins, and that a state saved by one loader resumes exactly in a loader
of the other; the last test runs the suite's state tests and golden state cases against that
backend.
"""

from __future__ import annotations

import functools
import json
import sys

import pytest
from _suite import ROOT
from zephon import Dataset, InMemoryShard, Pipeline, StaticMixtureWorkSource

from batchspec import reference
from batchspec.conformance.helpers.asserts import assert_batch_equal
from batchspec.conformance.helpers.envelope import body_of
from batchspec.conformance.helpers.pipelines import (
    corpus_pipeline,
    index_pipeline,
    other_stages_pipeline,
    row_indices,
)
from batchspec.conformance.helpers.sample_batches import Contract

sys.path.insert(0, str(ROOT / "tests" / "probe_backends"))
import canonical_fingerprint_backend as independent

FIXED_CASE = ROOT / "golden" / "data" / "test_state_fingerprint_of_a_fixed_pipeline" / "record.json"


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEPHON_CATALOG_DIR", str(tmp_path / "catalog"))
    return tmp_path


def test_hand_written_json_is_canonical():
    """The independent writer's output for awkward values, written out literally."""
    value = {"b": [1, None, True, False, 2.5], "a": 'q"b\\n\n\t\x01\x7fé€😀', "": {"z": 0, "Z": -1}}
    assert independent.write_canonical_json(value) == (
        '{"":{"Z":-1,"z":0},"a":"q\\"b\\\\n\\n\\t\\u0001\\u007f\\u00e9\\u20ac\\ud83d\\ude00",'
        '"b":[1,null,true,false,2.5]}'
    )


def _tokenizer_by_id(scratch):
    dataset = Dataset.from_dict("d", {0: InMemoryShard([{"text": "a"}])})
    work_source = StaticMixtureWorkSource([dataset], {"d": 1.0}, chunk_size=1, seed=0)
    return Pipeline(work_source).decode_text().tokenize(tokenizer_id="org/some-model", field="text").batch(2)


PIPELINES = {
    "corpus-default": lambda s: corpus_pipeline(s),
    "corpus-128": lambda s: corpus_pipeline(s, seq_len=128, batch_size=2, docs=16),
    "corpus-threads-runner": lambda s: corpus_pipeline(s, seq_len=128, batch_size=2, runner="threads"),
    "index": lambda s: index_pipeline(s, 10, 2, "redistribute"),
    "index-batch-2-replicas-2": lambda s: index_pipeline(s, 12, 2, "redistribute", batch_size=2, canonical_replicas=2),
    "index-wrap": lambda s: index_pipeline(s, 40, 8, "redistribute", pack=(8, "wrap")),
    "index-first-fit": lambda s: index_pipeline(s, 40, 8, "redistribute", pack=(8, "first_fit")),
    "other-stages": other_stages_pipeline,
    "tokenizer-by-id": _tokenizer_by_id,
}


@pytest.mark.parametrize("name", list(PIPELINES))
def test_independent_fingerprint_equals_the_reference(scratch, name):
    pipeline = PIPELINES[name](scratch)
    assert independent.describe(pipeline) == reference.pipeline_description(pipeline)
    assert independent.canonical_fingerprint(pipeline) == reference.pipeline_fingerprint(pipeline)


@pytest.mark.parametrize("name", ["corpus-128", "index-first-fit"])
def test_fingerprint_is_stable_once_zephon_built_its_engine(scratch, name):
    """Zephon inserts ReplayFilter nodes when it starts; the envelope the reference writes then
    carries the fingerprint both implementations give."""
    pipeline = PIPELINES[name](scratch)
    before = independent.canonical_fingerprint(pipeline)
    loader = reference.ZephonDataLoader(pipeline, row_indices, packing_contract=Contract())
    next(loader)
    data = loader.state_dict()["zephon"]
    loader.close()
    assert any(node.name.endswith("_replay_filter") for node in pipeline._graph.nodes), "# sanity"
    assert body_of(data)["fingerprint"] == before == independent.canonical_fingerprint(pipeline)


def test_the_golden_fixed_pipeline_has_the_pinned_digest(scratch):
    """The golden case's hand-written digest is also the independent implementation's."""
    record = json.loads(FIXED_CASE.read_text())
    spec = dict(record["inputs"]["pipelines"]["P"])
    pipeline = index_pipeline(scratch, spec.pop("n"), spec.pop("chunk_size"), spec.pop("policy"), **spec)
    assert independent.canonical_fingerprint(pipeline) == record["expected"]["outcomes"]["2 state"]["fingerprint"]


def _convert():
    return functools.partial(
        reference.convert_text_batch,
        packing_contract=Contract(),
        ignore_index=-100,
        mask_segment_starts=True,
        allow_cross_document_attention=False,
    )


@pytest.mark.parametrize(
    "saver, loader_type",
    [(reference, independent), (independent, reference)],
    ids=["reference-to-independent", "independent-to-reference"],
)
def test_state_resumes_exactly_across_implementations(scratch, saver, loader_type):
    """A state saved after 3 batches of the tokenized, packed corpus by one loader resumes in
    a loader of the other implementation with exactly the uninterrupted run's batches."""

    def pipeline(name):
        return corpus_pipeline(scratch / name, seq_len=128, batch_size=2, exhausted_policy="repeat")

    first = saver.ZephonDataLoader(pipeline("first"), _convert(), packing_contract=Contract())
    for _ in range(3):
        next(first)
    saved = first.state_dict()
    expected = [next(first) for _ in range(4)]
    first.close()

    resumed = loader_type.ZephonDataLoader(pipeline("resumed"), _convert(), packing_contract=Contract())
    resumed.load_state_dict(saved)
    assert resumed.state_dict() == saved
    for k, want in enumerate(expected):
        got = next(resumed)
        assert list(got) == list(want)
        assert_batch_equal(got, want, clause="state-exact-resume", call=f"batch {4 + k} after resume")
    resumed.close()
