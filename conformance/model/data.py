"""The batches of the model-level checks, all real text of the committed corpus.

``packed_batches``: rows of Zephon's real pipeline (``corpus_pipeline``: tokenize with the
corpus BPE, ``pack_flat``; ``PIPELINE_SHAPES``), plus one hand-packed batch of corpus token runs
that reaches the corners a pipeline batch may miss: one-token documents, a document that ends
the row (no padding), a row of one real token (``padding_length = L - 1``) and a row of many
short documents. ``unpacked_batches``: records of one corpus document each, of different lengths
(one of a single token, one as long as ``pad_to_length``), without positions or packing
metadata, for the unpacked route (``pad_to_length``).
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

from zephon import SampleBatch

from batchspec.conformance.helpers.corpus import PAD_ID, CorpusTokenizer, corpus_texts
from batchspec.conformance.helpers.pipelines import corpus_pipeline, zephon_catalog
from batchspec.conformance.helpers.sample_batches import Row, packed_row, sample_batch

__all__ = ["PIPELINE_SHAPES", "UNPACKED_LENGTH", "ModelBatch", "packed_batches", "unpacked_batches"]

# (sequence length S, rows B, the stream's batches taken): the first batches of a stream hold
# the start of long documents split to whole rows; later ones pack several documents and padding
PIPELINE_SHAPES = ((256, 3, (8,)),)
EDGE_LENGTH = 41
"""L of the hand-packed corner batch (S = 40)."""
UNPACKED_LENGTH = 33
"""``pad_to_length`` of the unpacked batches (S = 32)."""


@dataclass(frozen=True)
class ModelBatch:
    """One input batch: ``name`` (shown in failures), the ``SampleBatch``, and for the
    unpacked route the ``pad_to_length`` / ``pad_token_id`` it is converted with."""

    name: str
    sample_batch: SampleBatch
    pad_to_length: int | None = None
    pad_token_id: int | None = None


@functools.cache
def _corpus_tokens(count: int = 24) -> tuple[tuple[int, ...], ...]:
    """The token ids of the first ``count`` corpus documents (no BOS/EOS)."""
    tokenizer = CorpusTokenizer()
    return tuple(tuple(tokenizer([text], add_special_tokens=False)["input_ids"][0]) for text in corpus_texts()[:count])


def _pieces(lengths: list[int]) -> list[list[int]]:
    """Consecutive runs of corpus tokens of the given lengths (real text, cut where it falls)."""
    stream = [t for doc in _corpus_tokens() for t in doc]
    out, at = [], 0
    for n in lengths:
        out.append(stream[at : at + n])
        at += n
    return out


def _edge_batch() -> SampleBatch:
    """The corner rows, L = ``EDGE_LENGTH``: one-token documents between longer ones and padding;
    a document ending the row; one real token then padding; many short documents; a one-token
    document ending the row; seven rows (per-row code past the first few)."""
    L = EDGE_LENGTH
    d = _pieces([7, 1, 12, 1, 6, 30, 11, 1, 9, 4, 3, 5, 2, 6, 1, 8, 7, 40, 25, 1])
    rows = [
        packed_row([d[0], d[1], d[2], d[3], d[4]], L - 27, PAD_ID),
        packed_row([d[5], d[6]], 0, PAD_ID),  # the last document ends the row: its last token is only a target
        packed_row([d[7]], L - 1, PAD_ID),  # one real token, its label's target is padding
        packed_row([d[8], d[9], d[10], d[11], d[12], d[13], d[14]], L - 30, PAD_ID),
        packed_row([d[15], d[16]], L - 15, PAD_ID),
        packed_row([d[17], d[19]], 0, PAD_ID),  # a one-token document ends the row: an input, no target
        packed_row([d[18]], L - 25, PAD_ID),
    ]
    assert all(len(r.tokens) == L for r in rows), [len(r.tokens) for r in rows]
    return sample_batch(rows)


@functools.cache
def _pipeline_batches() -> tuple[ModelBatch, ...]:
    out = []
    with tempfile.TemporaryDirectory(prefix="batchspec-model-") as scratch, zephon_catalog(Path(scratch) / "catalog"):
        for seq_len, batch_size, taken in PIPELINE_SHAPES:
            pipeline = corpus_pipeline(Path(scratch) / f"s{seq_len}", seq_len=seq_len, batch_size=batch_size)
            stream = iter(pipeline)
            try:
                for k in range(max(taken) + 1):
                    batch = next(stream)
                    if k in taken:
                        out.append(ModelBatch(f"corpus pipeline S={seq_len} B={batch_size} batch {k}", batch))
            finally:
                getattr(stream, "close", lambda: None)()
    return tuple(out)


def packed_batches() -> tuple[ModelBatch, ...]:
    """The packed input batches: the pipeline's, then the corner batch."""
    return (*_pipeline_batches(), ModelBatch(f"corner rows L={EDGE_LENGTH}", _edge_batch()))


def unpacked_batches() -> tuple[ModelBatch, ...]:
    """One batch of unpacked records: corpus documents cut to 1, 9, ``UNPACKED_LENGTH`` (ends the
    row: no padding), 20, 2, 31 and 12 tokens, without positions or packing metadata."""
    d = _pieces([1, 9, UNPACKED_LENGTH, 20, 2, 31, 12])
    rows = [Row(tuple(doc), None, None) for doc in d]
    return (
        ModelBatch(f"unpacked records, pad_to_length={UNPACKED_LENGTH}", sample_batch(rows), UNPACKED_LENGTH, PAD_ID),
    )
