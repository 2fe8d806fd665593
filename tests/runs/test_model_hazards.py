"""Each hazard of SPEC.md's section "Feeding a TrainingBatch to a model" is real: the wrong
wiring it names is *not* equivalent to the documents trained alone, and the wiring the section
gives instead is. The reference's batches of the corpus corner rows (one-token documents,
padding, a document ending the row) through the tiny float64 Llama of the model checks, under
the pinned transformers; the figures the section quotes are these tests' measurements."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from batchspec import reference
from batchspec.conformance.helpers.sample_batches import Contract, rows_of
from batchspec.conformance.model import wiring
from batchspec.conformance.model.data import packed_batches
from batchspec.conformance.model.documents import documents
from batchspec.conformance.model.evaluation import TOLERANCES, alone_logits, largest_difference
from batchspec.conformance.model.models import build_model, tiny_llama_config

pytest.importorskip("transformers")

EQUIVALENT = TOLERANCES[(torch.float64, "sdpa")]
EAGER = TOLERANCES[(torch.float64, "eager")]


@functools.cache
def _setup(mask_type: str = "block_causal"):
    """(model, batch, its documents) for the corner rows."""
    model = build_model(tiny_llama_config())
    corner = packed_batches()[-1]
    batch = reference.convert_text_batch(corner.sample_batch, Contract(mask_type), -100, False, False)
    docs = documents(rows_of(corner.sample_batch), xdoc=False, mask_segment_starts=False)
    return model, batch, docs


def _difference(model, logits, docs, implementation="sdpa") -> float:
    return largest_difference(logits, docs, alone_logits(model, docs, implementation))


def test_eager_attention_with_the_bool_mask_as_given_masks_nothing():
    """eager adds its mask to the scores: True/False add 1/0, so every earlier key, of every
    document and of padding, is attended. The additive mask of ``wiring.additive_mask`` works."""
    model, batch, docs = _setup()
    model.set_attention("eager")
    with torch.no_grad():
        wrong = model.logits(batch["input_ids"], batch["position_ids"], attention_mask=batch["attention_mask"])
        right = model.logits(
            batch["input_ids"],
            batch["position_ids"],
            attention_mask=wiring.additive_mask(batch["attention_mask"], model.dtype),
        )
        wrong_diff, right_diff = _difference(model, wrong, docs, "eager"), _difference(model, right, docs, "eager")
    print(f"eager + bool mask: {wrong_diff:.3g}; eager + additive mask: {right_diff:.3g}")
    assert wrong_diff > 1.0, "eager attention with the bool mask should mask nothing"
    assert right_diff <= EAGER


def test_an_additive_mask_of_the_float64_minimum_gives_nan_in_eager_attention():
    """eager's softmax runs in float32, where ``finfo(float64).min`` is ``-inf``: a padding query
    row with no attended key is NaN, and in the next layer the NaN of the padding values reaches
    every real token of the row (0 * NaN). ``finfo(float32).min`` stays finite."""
    model, batch, docs = _setup()
    model.set_attention("eager")
    mask = batch["attention_mask"]
    float64_min = torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, torch.finfo(torch.float64).min)
    with torch.no_grad():
        logits = model.logits(batch["input_ids"], batch["position_ids"], attention_mask=float64_min)
    padded_rows = [b for b in range(mask.shape[0]) if bool((batch["document_ids"][b] == 0).any())]
    real = batch["document_ids"] > 0
    nan_real = [b for b in padded_rows if bool(logits[b][real[b]].isnan().all())]
    print(f"rows with padding: {padded_rows}; rows whose every real token is NaN: {nan_real}")
    assert padded_rows and nan_real == padded_rows
    unpadded = [b for b in range(mask.shape[0]) if b not in padded_rows]
    assert unpadded and not bool(logits[unpadded].isnan().any()), "rows without padding stay finite"


def test_passing_the_shifted_labels_as_labels_shifts_them_twice():
    """A Hugging Face causal-LM loss shifts ``labels=`` by one: the batch's labels are already
    shifted, so each input is scored against the token two ahead, with no error. Given as
    ``shift_labels=`` too (``labels=`` must be there for any loss to be computed), they are taken
    as they are, and the loss equals the mean per-token loss (``wiring.token_losses``)."""
    model, batch, docs = _setup()
    model.set_attention("sdpa")
    kwargs = {"attention_mask": batch["attention_mask"], "position_ids": batch["position_ids"], "use_cache": False}
    ids, labels = model.fold(batch["input_ids"]), model.fold(batch["labels"])
    with torch.no_grad():
        logits = model.logits(batch["input_ids"], batch["position_ids"], attention_mask=batch["attention_mask"])
        per_token = wiring.token_losses(logits, labels, -100)
        mean = float(per_token.sum() / (labels != -100).sum())
        ahead = wiring.token_losses(logits[:, :-1], labels[:, 1:], -100)
        two_ahead = float(ahead.sum() / (labels[:, 1:] != -100).sum())
        twice = float(model.module(input_ids=ids, labels=labels, **kwargs).loss)
        # labels= must be given for the loss to be computed at all; shift_labels= then replaces it
        once = float(model.module(input_ids=ids, labels=labels, shift_labels=labels, **kwargs).loss)
    print(f"mean per-token loss {mean:.6f}; labels= {twice:.6f} (two ahead {two_ahead:.6f}); shift_labels= {once:.6f}")
    assert math.isclose(twice, two_ahead, rel_tol=1e-6), "labels= scores each input against the token two ahead"
    assert abs(twice - mean) > 1e-3
    assert math.isclose(once, mean, rel_tol=1e-6), "the HF loss computes in float32: 1e-6"


def test_the_document_ids_map_as_attention_mask_is_read_as_a_padding_mask():
    """A ``[batch, sequence]`` integer ``attention_mask`` is a padding mask to transformers:
    every nonzero id means "a token", so the documents of a row attend to each other. The
    ``document_ids`` contract's map is for a varlen route (its metadata), not for the model's
    ``attention_mask``."""
    model, batch, docs = _setup("document_ids")
    model.set_attention("sdpa")
    with torch.no_grad():
        logits = model.logits(batch["input_ids"], batch["position_ids"], attention_mask=batch["attention_mask"])
    first_docs = [d for d in docs if d.start == 0]
    later_docs = [d for d in docs if d.start > 0]
    first = _difference(model, logits, first_docs)
    later = _difference(model, logits, later_docs)
    print(f"first documents of a row: {first:.3g}; later documents: {later:.3g}")
    assert first <= EQUIVALENT, "a row's first document sees nothing before it either way"
    assert later > 1e-3, "later documents attend to the earlier ones"


def test_packed_sequence_detection_from_position_ids_needs_use_cache_false():
    """With no ``attention_mask``, transformers finds packed documents from ``position_ids``
    (a position that is not the previous + 1 starts a document) only when no cache is built:
    with the default ``use_cache=True`` the whole row is one causal sequence."""
    model, batch, docs = _setup()
    model.set_attention("sdpa")
    ids, positions = model.fold(batch["input_ids"]), batch["position_ids"]
    later = [d for d in docs if d.start > 0]
    with torch.no_grad():
        cached = model.module(input_ids=ids, position_ids=positions).logits
        uncached = model.module(input_ids=ids, position_ids=positions, use_cache=False).logits
    with_cache, without = _difference(model, cached, later), _difference(model, uncached, docs)
    print(f"position_ids only, use_cache=True: {with_cache:.3g}; use_cache=False: {without:.3g}")
    assert with_cache > 1e-3
    assert without <= EQUIVALENT
