"""The reference shifts rows by hand (SPEC.md decision D-1); it must agree with Zephon 0.2.0's
own ``SampleBatch.to_training`` on real packed batches of the corpus."""

from __future__ import annotations

import torch

from batchspec import reference
from batchspec.conformance.helpers.pipelines import corpus_pipeline


def test_reference_shift_agrees_with_zephon_to_training(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEPHON_CATALOG_DIR", str(tmp_path / "catalog"))  # Zephon's scratch under tmp_path
    pipeline = corpus_pipeline(tmp_path, seq_len=256, batch_size=4)
    stream = iter(pipeline)
    padded_rows = 0
    try:
        for _ in range(8):
            sample_batch = next(stream)
            zephon = sample_batch.to_training(
                return_labels=True, return_padding_mask=True, dtype=torch.long, ignore_index=-100
            )
            ours = reference.convert_text_batch(
                sample_batch, reference.DEFAULT_PACKED_SEQUENCE_CONTRACT, -100, False, False
            )
            for ours_key, zephon_key in [
                ("input_ids", "input_ids"),
                ("labels", "labels"),
                ("padding_mask", "padding_mask"),
                ("position_ids", "positions"),
            ]:
                assert ours[ours_key].shape == zephon[zephon_key].shape, ours_key
                assert torch.equal(ours[ours_key], zephon[zephon_key].to(ours[ours_key].dtype)), ours_key
            assert ours["padding_mask"].dtype == zephon["padding_mask"].dtype == torch.bool
            padded_rows += int(ours["padding_mask"].any(dim=1).sum())
    finally:
        stream.close()
    assert padded_rows > 0, "# sanity check: the batches compared should include padded rows"
