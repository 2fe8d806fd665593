"""The benchmark inputs, all built from the committed Node.js API corpus with fixed seeds.

* ``pipeline_batch(batch, sequence)``: the first ``SampleBatch`` the real corpus pipeline
  (tokenize, ``pack_flat`` first-fit, batch) yields for rows of ``sequence + 1`` tokens: list
  ``input_ids``, numpy ``positions``, ``meta.padding_length``, exactly what ``convert_text_batch``
  receives in training.
* ``tensor_batch(batch)``: the same rows with every payload field an int64 tensor.
* ``sweep_rows(documents_per_row, ...)``: rows of corpus tokens cut into a given number of
  documents, for the documents-per-row curve.
* ``unpacked_batch(batch, sequence)``: one corpus document per record, no positions, for the
  unpacked ``pad_to_length`` route.
* ``rollouts(count)``: RL rollouts (prompt + response from corpus documents) as plain arrays.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from batchspec.conformance.helpers.corpus import CorpusTokenizer, corpus_texts
from batchspec.conformance.helpers.pipelines import corpus_pipeline, zephon_catalog
from batchspec.conformance.helpers.sample_batches import (
    Row,
    packed_row,
    payload_form,
    row_positions,
    rows_of,
    sample_batch,
)

__all__ = [
    "BACKENDS",
    "DEVICE",
    "SELECTED_SHAPES",
    "SHAPES",
    "Rollout",
    "corpus_documents",
    "document_ids_of",
    "documents_of",
    "pipeline_batch",
    "rollouts",
    "sweep_rows",
    "tensor_batch",
    "unpacked_batch",
]

# (batch, sequence) of the convert_text_batch workloads; sequence is S, rows hold S + 1 tokens.
SHAPES = ((8, 4096), (8, 8192), (4, 32768), (1, 131072))

# The run's options, on pytest's config.stash (set by bench/conftest.py's pytest_configure): the
# device (--device), the backends by --backend name, the --bench-shapes given (None: SHAPES).
DEVICE = pytest.StashKey[str]()
BACKENDS = pytest.StashKey[dict]()
SELECTED_SHAPES = pytest.StashKey["list[tuple[int, ...]] | None"]()


@functools.cache
def corpus_documents() -> tuple[tuple[int, ...], ...]:
    """Every corpus document, tokenized (no special tokens), in shard order."""
    tokenizer = CorpusTokenizer()
    encoded = tokenizer.backend.encode_batch(corpus_texts(), add_special_tokens=False)
    return tuple(tuple(e.ids) for e in encoded)


@functools.cache
def pipeline_batch(batch: int, sequence: int):
    """A ``SampleBatch`` of the real corpus pipeline for ``batch`` rows of ``sequence + 1``
    tokens (documents repeat once the corpus is read): the first of its batches whose padding
    is at most 10% of its tokens, else the least padded of the first few (16 for small shapes,
    fewer as a batch holds more than 2**19 tokens), so the rows are as full as training rows."""
    tries = min(16, max(1, 2**19 // (batch * (sequence + 1))))
    with tempfile.TemporaryDirectory() as scratch, zephon_catalog(Path(scratch) / "catalog"):
        pipeline = corpus_pipeline(Path(scratch), seq_len=sequence, batch_size=batch, exhausted_policy="repeat")
        stream = iter(pipeline)
        try:
            best, best_padding = None, float("inf")
            for _ in range(tries):
                candidate = next(stream)
                padding = sum(record.meta.padding_length or 0 for record in candidate.records)
                if padding < best_padding:
                    best, best_padding = candidate, padding
                if padding <= 0.1 * batch * (sequence + 1):
                    break
            return best
        finally:
            getattr(stream, "close", lambda: None)()


def tensor_batch(batch):
    """A new ``SampleBatch`` of ``batch``'s rows with int64 tensor payloads."""
    return payload_form(sample_batch(rows_of(batch)), "tensor")


def sweep_rows(documents_per_row: int, batch: int = 8, sequence: int = 8192, seed: int = 0) -> list[Row]:
    """``batch`` rows of ``sequence + 1`` corpus tokens, each cut at random into
    ``documents_per_row`` documents, with a random pad tail of up to 63 tokens."""
    rng = np.random.default_rng(seed)
    stream = np.concatenate([np.asarray(d, dtype=np.int64) for d in corpus_documents()])
    length = sequence + 1
    rows = []
    for b in range(batch):
        padding = int(rng.integers(0, 64))
        real = length - padding
        cuts = np.sort(rng.choice(np.arange(1, real), size=documents_per_row - 1, replace=False))
        tokens = stream[(b * length) % (len(stream) - length) :][:real]
        documents = np.split(tokens, cuts)
        rows.append(packed_row([d.tolist() for d in documents], padding))
    return rows


def unpacked_batch(batch: int, sequence: int, seed: int = 0):
    """``batch`` records, each one corpus document (at most ``sequence + 1`` tokens) with no
    positions and no packing metadata: the input of the unpacked route."""
    rng = np.random.default_rng(seed)
    documents = corpus_documents()
    picks = rng.choice(len(documents), size=batch, replace=False)
    return sample_batch([Row(documents[i][: sequence + 1], None, None) for i in picks])


def documents_of(rows: list[Row]) -> list[list[int]]:
    """The real documents of packed rows (split where the position restarts at 0, pad tail
    left out): what a flattening collator is given instead of packed rows."""
    documents = []
    for row in rows:
        real = len(row.tokens) - (row.padding_length or 0)
        positions = row.positions if row.positions is not None else range(real)
        current: list[int] = []
        for token, position in zip(row.tokens[:real], positions[:real]):
            if position == 0 and current:
                documents.append(current)
                current = []
            current.append(token)
        documents.append(current)
    return documents


def document_ids_of(rows: list[Row]) -> torch.Tensor:
    """int64 ``[B, S]`` document ids of packed rows ([ctb-document-ids]), computed here with
    numpy so the metadata benchmarks do not depend on any backend."""
    ids = []
    for row in rows:
        positions = np.asarray(row_positions(row)[:-1])
        document = np.cumsum(positions == 0)
        real = len(row.tokens) - (row.padding_length or 0)
        document[real:] = 0
        ids.append(document)
    return torch.as_tensor(np.stack(ids), dtype=torch.int64)


@dataclass(frozen=True)
class Rollout:
    """One RL rollout as arrays: prompt + response tokens, the shifted targets, weights that
    train only the response, per-token logprobs and one advantage."""

    input_ids: np.ndarray
    target_tokens: np.ndarray
    weights: np.ndarray
    logprobs: np.ndarray
    advantage: float


@functools.cache
def rollouts(count: int = 64, seed: int = 0, longest: int = 2048) -> tuple[Rollout, ...]:
    """``count`` rollouts whose prompt and response are corpus documents (each cut to at most
    ``longest // 2`` tokens), so their lengths are the corpus's."""
    rng = np.random.default_rng(seed)
    documents = corpus_documents()
    out = []
    for _ in range(count):
        prompt, response = (np.asarray(documents[i][: longest // 2]) for i in rng.choice(len(documents), 2))
        tokens = np.concatenate([prompt, response])
        weights = np.concatenate([np.zeros(len(prompt) - 1), np.ones(len(response)), [0.0]])
        out.append(
            Rollout(
                input_ids=tokens,
                target_tokens=np.append(tokens[1:], 0),
                weights=weights.astype(np.float32),
                logprobs=rng.normal(-2.0, 1.0, len(tokens)).astype(np.float32),
                advantage=float(rng.normal()),
            )
        )
    return tuple(out)
