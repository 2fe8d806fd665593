"""End to end: ``ZephonDataLoader`` over the real corpus pipeline (tokenize, pack, batch), 8 rows
of 8192 tokens, ``document_ids`` + metadata; batches per second and the conversion's share."""

from __future__ import annotations

import time

import pytest

from batchspec.bench.test_convert import ROUTES
from batchspec.conformance.helpers.pipelines import corpus_pipeline

BATCHES = 8


def test_loader_end_to_end(run, backend, backend_name, tmp_path, monkeypatch):
    contract, xdoc, output_format = ROUTES["document_ids+metadata"]
    convert_seconds = []

    def timed_convert(batch):
        start = time.perf_counter()
        out = backend.convert_text_batch(batch, contract, -100, False, xdoc, output_format)
        convert_seconds.append(time.perf_counter() - start)
        return out

    monkeypatch.setenv("ZEPHON_CATALOG_DIR", str(tmp_path / "catalog"))  # Zephon's scratch under tmp_path

    def epoch():
        pipeline = corpus_pipeline(tmp_path, seq_len=8192, batch_size=8, exhausted_policy="repeat")
        loader = backend.ZephonDataLoader(pipeline, timed_convert, output_format, packing_contract=contract)
        try:
            for _ in range(BATCHES):
                next(loader)
        finally:
            loader.close()

    if backend_name == "reference":
        pytest.skip("reference: 8 batches of 8 x 8192 with metadata take minutes (per-token loops)")
    start = time.perf_counter()
    epoch()
    share = sum(convert_seconds) / (time.perf_counter() - start)
    run(
        epoch,
        implementation=backend_name,
        kind="backend",
        workload=f"loader/corpus/8x8192/{BATCHES}batches",
        family="loader",
        items=BATCHES,
        tokens=BATCHES * 8 * 8192,
        conversion_share=round(share, 3),
    )
