"""Real text through a real Zephon pipeline and ``ZephonDataLoader`` (SPEC.md, "The real-data
scenario").

The Node.js API reference (MIT, ``golden/corpus``) is tokenized by the committed byte-level
BPE, packed by Zephon's ``pack_flat`` into rows of 1025 tokens, batched by 4 (block-causal
masks) or 12 (``document_ids``: more than 8 rows, where a backend's per-row code is met by row
indices the small batches never reach), and read
through the backend's ``ZephonDataLoader`` + ``convert_text_batch``. Every batch must satisfy
the contract's invariants, and every subdocument span must decode to bytes of the corpus.
"""

from __future__ import annotations

import pytest
import torch

from batchspec.conformance.helpers.asserts import check
from batchspec.conformance.helpers.corpus import BOS_ID, EOS_ID, CorpusTokenizer, corpus_bytes
from batchspec.conformance.helpers.invariants import check_converted_batch
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.pipelines import corpus_pipeline
from batchspec.conformance.helpers.sample_batches import Contract, rows_of

SEQ_LEN = 1024

# (id, contract, ignore_index, mask_segment_starts, rows per batch, batches)
CONFIGS = [
    ("block-causal-metadata", Contract("block_causal", True), IGNORE_INDEX, False, 4, 20),
    ("document-ids-segment-starts", Contract("document_ids", False), -1, True, 12, 8),
]


@pytest.mark.requires("zephon_loader", "convert_text_batch")
@pytest.mark.clause(
    "real-data-pipeline",
    "tb-shapes",
    "tb-dtypes",
    "ctb-shift",
    "ctb-padding-labels",
    "ctb-padding-mask",
    "ctb-document-ids",
    "batched-metadata",
    "loader-next",
)
@pytest.mark.parametrize("config", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_corpus_batches_satisfy_the_contract(backend, scratch, config):
    """20 batches of 4 x 1024 (or 8 of 12 x 1024) real tokens: invariants hold and spans decode
    to corpus text."""
    _, contract, ignore_index, mask_segment_starts, batch_size, num_batches = config
    taken = []

    def convert(sample_batch):
        taken.append(sample_batch)
        return backend.convert_text_batch(sample_batch, contract, ignore_index, mask_segment_starts, False)

    loader = backend.ZephonDataLoader(
        corpus_pipeline(scratch, seq_len=SEQ_LEN, batch_size=batch_size), convert, packing_contract=contract
    )
    tokenizer = CorpusTokenizer()
    corpus = corpus_bytes()
    documents_seen = 0
    padded_rows = 0
    try:
        for step in range(num_batches):
            out = next(loader)
            rows = rows_of(taken[step])
            call = f"batch {step} of the corpus pipeline (sample ids {[r.meta.sample_id for r in taken[step].records]})"
            assert len(rows) == batch_size and all(len(r.tokens) == SEQ_LEN + 1 for r in rows), (
                f"# sanity check: the pipeline should give {batch_size} rows of {SEQ_LEN + 1} tokens"
            )
            check_converted_batch(
                out,
                rows,
                ignore_index=ignore_index,
                mask_segment_starts=mask_segment_starts,
                contract=contract,
                call=call,
            )
            padded_rows += sum(1 for r in rows if r.padding_length)
            # Every subdocument span of input_ids decodes to bytes that occur in the corpus.
            for b in range(batch_size):
                ids = out["document_ids"][b]
                for document in range(1, int(ids.max()) + 1):
                    span = out["input_ids"][b][ids == document].tolist()
                    text = tokenizer.decode_bytes([t for t in span if t not in (BOS_ID, EOS_ID)])
                    check(
                        text in corpus,
                        f"row {b} subdocument {document} of {call} decodes to {text[:120]!r}..., "
                        "which does not occur in the corpus",
                        clause="real-data-pipeline",
                    )
                    documents_seen += 1
    finally:
        loader.close()
    # sanity check: the scenario exercised packing (several documents per row) and padding
    assert documents_seen > 2 * num_batches * batch_size, f"only {documents_seen} subdocuments in {num_batches} batches"
    assert padded_rows > 0, "no padded row in the scenario"
    assert isinstance(out["input_ids"], torch.Tensor)
