"""``corpus_pipeline`` (conformance/helpers/pipelines.py) leaves the process's environment as it
found it (issue 34: it set ``ZEPHON_CATALOG_DIR`` and never restored it, so every later test of
the worker, and a backend team's own code after a suite run in process, saw the last caller's
scratch directory); ``zephon_catalog`` is the one place that points Zephon's catalog somewhere,
for a block, and restores the caller's value."""

from __future__ import annotations

import os

import pytest

from batchspec.conformance.helpers.pipelines import corpus_pipeline, zephon_catalog


@pytest.mark.parametrize("before", [None, "/callers/own/catalog"], ids=["unset", "set"])
def test_corpus_pipeline_leaves_the_catalog_variable_as_it_was(tmp_path, monkeypatch, before):
    if before is None:
        monkeypatch.delenv("ZEPHON_CATALOG_DIR", raising=False)
    else:
        monkeypatch.setenv("ZEPHON_CATALOG_DIR", before)
    corpus_pipeline(tmp_path, seq_len=16, batch_size=1, docs=2)
    assert os.environ.get("ZEPHON_CATALOG_DIR") == before


def test_a_pipeline_run_inside_zephon_catalog_keeps_its_catalog_under_scratch(tmp_path, monkeypatch):
    monkeypatch.delenv("ZEPHON_CATALOG_DIR", raising=False)
    with zephon_catalog(tmp_path / "catalog"):
        stream = iter(corpus_pipeline(tmp_path, seq_len=16, batch_size=1, docs=2))
        try:
            batch = next(stream)
        finally:
            getattr(stream, "close", lambda: None)()
    assert len(batch.records) == 1 and len(batch.records[0].payload["input_ids"]) == 17
    assert "ZEPHON_CATALOG_DIR" not in os.environ
