"""Cross-document attention: ``enable_xdoc_attention`` and ``convert_text_batch`` with
``allow_cross_document_attention=True`` (SPEC.md, "``convert_text_batch``" and
"``enable_xdoc_attention``"). Expected values are written by hand (the SPEC's worked
examples C and G, field report F14 in docs/sources.md)."""

from __future__ import annotations

import pytest
import torch

from conformance._asserts import assert_batch_equal, assert_raises, assert_tensor_equal
from conformance._examples import (
    EXAMPLE_A,
    EXAMPLE_IDS,
    EXAMPLE_ROWS,
    F,
    T,
    block_mask,
    convert,
    long,
)
from conformance._zephon import Contract, Row, describe_rows

JOINED_IDS = [[1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1, 1]]
EXAMPLE_C = {
    **EXAMPLE_A,
    "position_ids": long([[0, 1, 2, 3, 4, 5, 6, 0], [0, 1, 2, 3, 4, 5, 6, 7]]),
    "attention_document_ids": long(JOINED_IDS),
    "_packed_seq_ids": long(JOINED_IDS),
    "attention_mask": block_mask(
        "1....... 11...... 111..... 1111.... 11111... 111111.. 1111111. ........",
        "1....... 11...... 111..... 1111.... 11111... 111111.. 1111111. 11111111",
    ),
}


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause(
    "ctb-xdoc",
    "ctb-selected-ids",
    "xdoc-attention-ids",
    "xdoc-positions",
    "xdoc-untouched",
    "batched-block-causal",
    "batched-packed-seq-ids",
)
def test_example_c_xdoc_joins_rows(backend):
    """Example C: one attention document per row, continuous positions, labels as in A."""
    out = convert(backend, EXAMPLE_ROWS, xdoc=True)
    assert_batch_equal(out, EXAMPLE_C, clause="ctb-xdoc", call="Example C, allow_cross_document_attention=True")


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("ctb-xdoc", "ctb-segment-starts")
def test_xdoc_keeps_original_boundaries_for_segment_starts(backend):
    """mask_segment_starts masks the original boundaries even when xdoc joins them."""
    out = convert(backend, EXAMPLE_ROWS, xdoc=True, mask_segment_starts=True)
    expected = long([[12, 13, -100, 22, -100, 32, -100, -100], [42, 43, 44, 45, -100, 52, 53, -100]])
    assert_tensor_equal("labels", out["labels"], expected, clause="ctb-xdoc", call="Example C + mask_segment_starts")
    assert_tensor_equal("document_ids", out["document_ids"], long(EXAMPLE_IDS), clause="ctb-xdoc")


@pytest.mark.requires("convert_text_batch", "xdoc", "packed_metadata")
@pytest.mark.clause("ctb-selected-ids", "batched-metadata", "batched-document-ids-mask")
def test_example_g_metadata_from_joined_ids(backend):
    """Example G: under xdoc, cu_seqlens resets only at row boundaries."""
    out = convert(backend, EXAMPLE_ROWS, Contract("document_ids", True), xdoc=True)
    expected = {
        "attention_mask": long(JOINED_IDS),
        "_packed_seq_ids": long(JOINED_IDS),
        "packed_token_indices": long([[0, 1, 2, 3, 4, 5, 6, -1], [0, 1, 2, 3, 4, 5, 6, 7]]),
        "cu_seqlens": torch.tensor([[0, 7], [0, 8]], dtype=torch.int32),
        "max_seqlen": 8,
    }
    assert_batch_equal(out, expected, clause="ctb-selected-ids", call="Example G")


def mrope_batch():
    """F14: three RoPE axes, two subdocuments and one pad slot, after adapt_model_inputs."""
    axis = [0, 1, 0, 1, 2, 0]
    return {
        "input_ids": long([[5, 6, 7, 8, 9, 0]]),
        "labels": long([[6, -100, 8, 9, -100, -100]]),
        "padding_mask": torch.tensor([[F, F, F, F, F, T]]),
        "position_ids": long([[axis], [axis], [axis]]),
        "document_ids": long([[1, 1, 2, 2, 2, 0]]),
        "attention_document_ids": long([[1, 1, 2, 2, 2, 0]]),
    }


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-positions", "xdoc-attention-ids", "xdoc-untouched")
def test_mrope_positions_shift_every_axis(backend):
    """F14: [3, 1, 6] positions become [0,1,2,3,4,0] on every axis; other fields untouched."""
    batch = mrope_batch()
    originals = {k: v.clone() for k, v in batch.items()}
    tensors_before = dict(batch)
    out = backend.enable_xdoc_attention(batch, Contract())
    assert out is batch, "enable_xdoc_attention must return the same mapping [xdoc-untouched]"
    translated = [0, 1, 2, 3, 4, 0]
    assert_tensor_equal("position_ids", out["position_ids"], long([[translated]] * 3), clause="xdoc-positions")
    assert_tensor_equal(
        "attention_document_ids", out["attention_document_ids"], long([[1, 1, 1, 1, 1, 0]]), clause="xdoc-attention-ids"
    )
    for key in ("input_ids", "labels", "padding_mask", "document_ids"):
        assert_tensor_equal(key, out[key], originals[key], clause="xdoc-untouched")
    for key, tensor in tensors_before.items():
        assert_tensor_equal(
            f"{key} (the tensor given)",
            tensor,
            originals[key],
            clause="xdoc-untouched",
            call="no tensor may be modified in place",
        )


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-positions")
def test_mrope_offset_takes_the_largest_axis(backend):
    """A16: the next subdocument starts one past the previous one's largest coordinate on any axis."""
    batch = {
        "position_ids": long([[[0, 1, 0, 1]], [[0, 5, 0, 0]]]),  # axis 1 of subdocument 1 reaches 5
        "document_ids": long([[1, 1, 2, 2]]),
        "attention_document_ids": long([[1, 1, 2, 2]]),
    }
    out = backend.enable_xdoc_attention(batch, Contract())
    assert_tensor_equal(
        "position_ids",
        out["position_ids"],
        long([[[0, 1, 6, 7]], [[0, 5, 6, 6]]]),
        clause="xdoc-positions",
        call="axes [[0,1,0,1],[0,5,0,0]], ids [1,1,2,2]",
    )


@pytest.mark.requires("xdoc", "adapt_model_inputs")
@pytest.mark.clause("xdoc-attention-ids", "xdoc-positions", "adapt-attention-ids")
def test_xdoc_keeps_processor_exclusions(backend):
    """An ineligible token stays excluded (id 0) but its subdocument still numbers it."""
    batch = {"position_ids": long([[0, 1, 2, 0, 1, 0]]), "document_ids": long([[1, 1, 1, 2, 2, 0]])}
    backend.adapt_model_inputs(batch, torch.tensor([[T, F, T, T, T, T]]))
    out = backend.enable_xdoc_attention(batch, Contract())
    assert_tensor_equal(
        "attention_document_ids",
        out["attention_document_ids"],
        long([[1, 0, 1, 1, 1, 0]]),
        clause="xdoc-attention-ids",
        call="eligibility [[T,F,T,T,T,T]]",
    )
    assert_tensor_equal("position_ids", out["position_ids"], long([[0, 1, 2, 3, 4, 0]]), clause="xdoc-positions")


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-contract")
@pytest.mark.parametrize("mask_type", ["block_causal", "document_ids"])
def test_contract_bounds_translated_positions(backend, mask_type):
    """max_sequence_length bounds the continuous numbering; the mask type changes nothing."""

    def batch():
        return {
            "position_ids": long([[0, 1, 2, 0, 1, 2]]),
            "document_ids": long([[1, 1, 1, 2, 2, 2]]),
            "attention_document_ids": long([[1, 1, 1, 2, 2, 2]]),
        }

    for bound in (None, 6, 100):
        out = backend.enable_xdoc_attention(batch(), Contract(mask_type, False, False, bound))
        assert_tensor_equal(
            "position_ids",
            out["position_ids"],
            long([[0, 1, 2, 3, 4, 5]]),
            clause="xdoc-contract",
            call=f"max_sequence_length={bound}",
        )
    # Translated positions [0, 1, 2, 3, 4, 7]: only 7 reaches the bound 6, so "both values" are 7 and 6.
    over = {
        "position_ids": long([[0, 1, 2, 0, 1, 4]]),
        "document_ids": long([[1, 1, 1, 2, 2, 2]]),
        "attention_document_ids": long([[1, 1, 1, 2, 2, 2]]),
    }
    assert_raises(
        ValueError,
        ("max_sequence_length", 7, 6),
        backend.enable_xdoc_attention,
        over,
        Contract(mask_type, False, False, 6),
        clause="xdoc-contract",
    )


def good_batch():
    return {
        "position_ids": long([[0, 1, 0]]),
        "document_ids": long([[1, 1, 2]]),
        "attention_document_ids": long([[1, 1, 2]]),
    }


def without(key):
    batch = good_batch()
    del batch[key]
    return batch


def replaced(key, value):
    batch = good_batch()
    batch[key] = value
    return batch


XDOC_ERRORS = [
    ("no-document-ids", without("document_ids"), ValueError, ("document_ids",)),
    ("no-attention-ids", without("attention_document_ids"), ValueError, ("attention_document_ids",)),
    ("no-positions", without("position_ids"), ValueError, ("position_ids",)),
    (
        "int32-positions",
        replaced("position_ids", torch.tensor([[0, 1, 0]], dtype=torch.int32)),
        TypeError,
        ("position_ids",),
    ),
    ("int32-ids", replaced("document_ids", torch.tensor([[1, 1, 2]], dtype=torch.int32)), TypeError, ("document_ids",)),
    ("positions-wrong-length", replaced("position_ids", long([[0, 1]])), ValueError, ("position_ids",)),
    ("positions-4d", replaced("position_ids", long([[[[0, 1, 0]]]])), ValueError, ("position_ids",)),
    (
        "ids-shape-mismatch",
        replaced("attention_document_ids", long([[1, 1, 2, 2]])),
        ValueError,
        ("attention_document_ids",),
    ),
    ("negative-position", replaced("position_ids", long([[0, -1, 0]])), ValueError, ("position_ids",)),
]


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-errors")
@pytest.mark.parametrize("case", XDOC_ERRORS, ids=[c[0] for c in XDOC_ERRORS])
def test_enable_xdoc_attention_rejects(backend, case):
    """Missing, mistyped or misshaped inputs raise the SPEC's error, naming the field."""
    _, batch, error, words = case
    assert_raises(error, words, backend.enable_xdoc_attention, batch, Contract(), clause="xdoc-errors")


# -- [xdoc-contract]: only translated positions are bounded ---------------------------------


def bounded_batch(attention=(1, 1, 2, 2, 0)):
    """Subdocument 1 at [0, 1], subdocument 2 at [0, 6] (a jump, not a boundary), and a pad
    slot (document id 0) at position 9: translated positions [0, 1, 2, 8, 9]."""
    return {
        "position_ids": long([[0, 1, 0, 6, 9]]),
        "document_ids": long([[1, 1, 2, 2, 0]]),
        "attention_document_ids": long([list(attention)]),
    }


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-contract", "xdoc-positions")
@pytest.mark.parametrize("mask_type", ["block_causal", "document_ids"])
def test_contract_bound_skips_tokens_without_a_document(backend, mask_type):
    """A position of a token with document_ids == 0 is not translated and not bounded: the pad
    slot at 9 passes max_sequence_length 9 (and 5 would not: translated 8 raises there)."""
    for bound in (9, 10):
        call = f"enable_xdoc_attention(positions [[0,1,0,6,9]], ids [[1,1,2,2,0]], max_sequence_length={bound})"
        try:
            out = backend.enable_xdoc_attention(bounded_batch(), Contract(mask_type, False, False, bound))
        except ValueError as error:
            raise AssertionError(
                f"raised ValueError({error}), but the largest translated position is 8 < {bound}; the pad slot's "
                f"position 9 is not translated [xdoc-contract: {call}]"
            ) from error
        assert_tensor_equal(
            "position_ids", out["position_ids"], long([[0, 1, 2, 8, 9]]), clause="xdoc-positions", call=call
        )


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-contract")
@pytest.mark.parametrize("attention", [(1, 1, 2, 2, 0), (1, 1, 2, 0, 0)], ids=["eligible", "excluded"])
def test_contract_bound_names_the_translated_position(backend, attention):
    """The one translated position past the bound (8, also when the processor excluded that
    token from attention: its document still numbers it) raises ValueError naming
    max_sequence_length and both values."""
    assert_raises(
        ValueError,
        ("max_sequence_length", 5, 8),
        backend.enable_xdoc_attention,
        bounded_batch(attention),
        Contract("block_causal", False, False, 5),
        clause="xdoc-contract",
    )


XDOC_PAD_TAIL_ROWS = {
    # [7, 8] then 6 pad tokens: translated positions [0, 1]; the pad tail holds 0 .. 4 as inputs.
    "pack-flat-positions": [Row((7, 8, 0, 0, 0, 0, 0, 0), (0, 1, 0, 1, 2, 3, 4, 5), 6)],
    "no-positions": [Row((7, 8, 0, 0, 0, 0, 0, 0), None, 6)],
}


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("xdoc-contract", "ctb-xdoc", "ctb-positions")
@pytest.mark.parametrize("form", list(XDOC_PAD_TAIL_ROWS))
@pytest.mark.parametrize("bound", [2, 4])
def test_convert_xdoc_bound_skips_the_pad_tail(backend, form, bound):
    """convert_text_batch with xdoc: max_sequence_length bounds the real tokens' positions only,
    so [7, 8] + 6 pads passes a bound of 2 or 4 (its pad tail's positions reach 4)."""
    rows = XDOC_PAD_TAIL_ROWS[form]
    call = f"convert_text_batch({describe_rows(rows)}, max_sequence_length={bound}, xdoc=True)"
    try:
        out = convert(backend, rows, Contract("block_causal", False, False, bound), xdoc=True)
    except ValueError as error:
        raise AssertionError(
            f"raised ValueError({error}), but the largest translated position is 1 < {bound}; padding keeps its "
            f"positions unchecked [xdoc-contract: {call}]"
        ) from error
    # The pad tail keeps its positions (0 .. n - 1 for a record without positions).
    assert_tensor_equal(
        "position_ids", out["position_ids"], long([[0, 1, 0, 1, 2, 3, 4]]), clause="ctb-positions", call=call
    )


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("xdoc-contract", "ctb-xdoc")
def test_convert_xdoc_bound_reached_by_a_real_token(backend):
    """Subdocuments [1,2,3] and [4,5,6] (positions 0,1,5: a jump) + 1 pad: the inputs' translated
    positions are [0,1,2,3,4,8]; max_sequence_length 6 raises naming it, 6 and 8; 9 passes."""
    rows = [Row((1, 2, 3, 4, 5, 6, 0), (0, 1, 2, 0, 1, 5, 0), 1)]
    out = convert(backend, rows, Contract("document_ids", True, False, 9), xdoc=True)
    assert_tensor_equal(
        "position_ids",
        out["position_ids"],
        long([[0, 1, 2, 3, 4, 8]]),
        clause="xdoc-contract",
        call=f"{describe_rows(rows)}, max_sequence_length=9",
    )
    assert_raises(
        ValueError,
        ("max_sequence_length", 6, 8),
        convert,
        backend,
        rows,
        Contract("document_ids", True, False, 6),
        xdoc=True,
        clause="xdoc-contract",
    )
