"""``adapt_model_inputs`` (SPEC.md, "``adapt_model_inputs``"): golden values and bad inputs."""

from __future__ import annotations

import pytest
import torch

from conformance._asserts import Shape, assert_raises, assert_tensor_equal
from conformance._examples import long

T, F = True, False


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("adapt-attention-ids", "adapt-no-mutation")
def test_without_eligibility_copies_document_ids(backend):
    """Without eligibility the attention ids equal the document ids; same mapping returned."""
    document_ids = long([[1, 1, 2, 0], [1, 2, 3, 3]])
    batch = {"document_ids": document_ids}
    out = backend.adapt_model_inputs(batch)
    assert out is batch, "adapt_model_inputs must return the same mapping object [adapt-attention-ids]"
    assert_tensor_equal(
        "attention_document_ids",
        out["attention_document_ids"],
        long([[1, 1, 2, 0], [1, 2, 3, 3]]),
        clause="adapt-attention-ids",
    )
    out["attention_document_ids"].fill_(9)
    assert_tensor_equal(
        "document_ids",
        document_ids,
        long([[1, 1, 2, 0], [1, 2, 3, 3]]),
        clause="adapt-no-mutation",
        call="attention_document_ids must be a separate tensor",
    )


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("adapt-attention-ids", "adapt-no-mutation")
def test_eligibility_excludes_tokens_without_renumbering(backend):
    """Ineligible (e.g. synthetic image) tokens get id 0; other ids are kept as they are."""
    document_ids = long([[1, 1, 1, 2, 2, 0]])
    eligibility = torch.tensor([[T, F, T, F, F, T]])
    out = backend.adapt_model_inputs({"document_ids": document_ids}, eligibility)
    assert_tensor_equal(
        "attention_document_ids",
        out["attention_document_ids"],
        long([[1, 0, 1, 0, 0, 0]]),
        clause="adapt-attention-ids",
        call="eligibility=[[T,F,T,F,F,T]]",
    )
    assert_tensor_equal("document_ids", document_ids, long([[1, 1, 1, 2, 2, 0]]), clause="adapt-no-mutation")
    assert_tensor_equal(
        "attention_eligibility", eligibility, torch.tensor([[T, F, T, F, F, T]]), clause="adapt-no-mutation"
    )


BAD_INPUTS = [
    ("missing-document-ids", {"input_ids": long([[1, 2]])}, None, ValueError, ("document_ids",)),
    (
        "document-ids-int32",
        {"document_ids": torch.tensor([[1, 1]], dtype=torch.int32)},
        None,
        TypeError,
        ("document_ids",),
    ),
    ("document-ids-1d", {"document_ids": long([1, 1])}, None, ValueError, ("document_ids",)),
    ("eligibility-int", {"document_ids": long([[1, 1]])}, long([[1, 0]]), TypeError, ("attention_eligibility",)),
    (
        "eligibility-shape",
        {"document_ids": long([[1, 1]])},
        torch.tensor([[T, T, T]]),
        ValueError,
        ("attention_eligibility", Shape(1, 2), Shape(1, 3)),
    ),
]


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("adapt-errors")
@pytest.mark.parametrize("case", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_inputs_are_rejected(backend, case):
    """Missing or malformed inputs raise the SPEC's error type, naming the field (and both
    shapes for a shape mismatch); the wording is free."""
    _, batch, eligibility, error, words = case
    assert_raises(error, words, backend.adapt_model_inputs, batch, eligibility, clause="adapt-errors")
