"""Golden cases and bad inputs for ``get_unpad_data`` and ``build_packed_sequence_metadata``
(SPEC.md, "Packed metadata"). Expected values are upstream nemo-automodel 0.7.0's, written
by hand (the SPEC's worked examples F and K)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
import torch

from conformance._asserts import Shape, assert_raises, assert_tensor_equal
from conformance._examples import int32, long

# (case id, mask, packed_token_indices, cu_seqlens, max_seqlen)
METADATA_CASES = [
    (
        "example-f-ids",
        long([[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]]),
        long([[0, 1, 2, 3, 4, 5, 6, -1], [0, 1, 2, 3, 4, 5, 6, 7]]),
        int32([[0, 3, 5, 7], [0, 5, 8, -1]]),
        5,
    ),
    (
        "example-g-joined-ids",
        long([[1, 1, 1, 1, 1, 1, 1, 0], [1] * 8]),
        long([[0, 1, 2, 3, 4, 5, 6, -1], list(range(8))]),
        int32([[0, 7], [0, 8]]),
        8,
    ),
    (
        "example-k-empty-row",
        long([[1, 2, 0], [0, 0, 0]]),
        long([[0, 1, -1], [-1, -1, -1]]),
        int32([[0, 1, 2], [0, -1, -1]]),
        1,
    ),
    ("example-k-interior-exclusion", long([[1, 0, 1, 2]]), long([[0, -1, 2, 3]]), int32([[0, 2, 3]]), 2),
    ("gapped-ids", long([[1, 1, 3, 3]]), long([[0, 1, 2, 3]]), int32([[0, 2, 4, -1]]), 2),
    (
        "bool-mask",
        torch.tensor([[True, True, False], [True, False, True]]),
        long([[0, 1, -1], [0, -1, 2]]),
        int32([[0, 2], [0, 2]]),
        2,
    ),
    ("int32-ids", torch.tensor([[1, 2, 2]], dtype=torch.int32), long([[0, 1, 2]]), int32([[0, 1, 3]]), 2),
]


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("meta-indices", "meta-cu-seqlens", "meta-max-seqlen", "meta-return")
@pytest.mark.parametrize("case", METADATA_CASES, ids=[c[0] for c in METADATA_CASES])
def test_build_packed_sequence_metadata_golden(backend, case):
    """Hand-checked metadata of small id masks, -1 fills and widths included."""
    name, mask, indices, cu_seqlens, max_seqlen = case
    before = mask.clone()
    out = backend.build_packed_sequence_metadata(mask)
    call = f"build_packed_sequence_metadata({mask.tolist()})"
    assert isinstance(out, Mapping), f"returned {type(out).__name__}, but should be a mapping [meta-return: {call}]"
    assert sorted(out) == ["cu_seqlens", "max_seqlen", "packed_token_indices"], (
        f"keys {sorted(out)} [meta-return: {call}]"
    )
    assert_tensor_equal("packed_token_indices", out["packed_token_indices"], indices, clause="meta-indices", call=call)
    assert_tensor_equal("cu_seqlens", out["cu_seqlens"], cu_seqlens, clause="meta-cu-seqlens", call=call)
    assert type(out["max_seqlen"]) is int and out["max_seqlen"] == max_seqlen, (
        f"max_seqlen={out['max_seqlen']!r}, but should be int {max_seqlen} [meta-max-seqlen: {call}]"
    )
    assert torch.equal(mask, before), f"the mask was modified in place [{call}]"


# (case id, mask, indices, cu_seqlens, max_seqlen)
UNPAD_CASES = [
    (
        "example-f-flat",
        long([[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]]),
        long([0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15]),
        int32([0, 3, 5, 7, 12, 15]),
        5,
    ),
    ("binary-int", long([[1, 1, 0], [0, 0, 0], [1, 0, 1]]), long([0, 1, 6, 8]), int32([0, 2, 4]), 2),
    ("binary-bool", torch.tensor([[True, False, True, True]]), long([0, 2, 3]), int32([0, 3]), 3),
    ("id-order-not-stream-order", long([[2, 2, 1, 0]]), long([0, 1, 2]), int32([0, 1, 3]), 2),
    ("interior-exclusion-indexed", long([[1, 0, 1, 2]]), long([0, 2, 3]), int32([0, 2, 3]), 2),
]


@pytest.mark.requires("unpad_data")
@pytest.mark.clause("unpad-binary", "unpad-indexed", "unpad-outputs")
@pytest.mark.parametrize("case", UNPAD_CASES, ids=[c[0] for c in UNPAD_CASES])
def test_get_unpad_data_golden(backend, case):
    """Hand-checked flat varlen metadata, binary and indexed routes."""
    name, mask, indices, cu_seqlens, max_seqlen = case
    out_indices, out_cu, out_max = backend.get_unpad_data(mask)
    call = f"get_unpad_data({mask.tolist()})"
    assert_tensor_equal("indices", out_indices, indices, clause="unpad-outputs", call=call)
    assert_tensor_equal("cu_seqlens", out_cu, cu_seqlens, clause="unpad-indexed", call=call)
    assert type(out_max) is int and out_max == max_seqlen, (
        f"max_seqlen={out_max!r}, but should be int {max_seqlen} [unpad-outputs: {call}]"
    )


# (case id, mask, facts the message must name): the wording is free; the parameter is named,
# and the shape given when the mask is not 2-D.
BAD_MASKS = [
    ("1-d", long([1, 1, 0]), ("attention_mask", Shape(3))),
    ("3-d", long([[[1, 1]]]), ("attention_mask", Shape(1, 1, 2))),
    ("all-zero", long([[0, 0], [0, 0]]), ("attention_mask",)),
    ("empty", torch.zeros((0, 4), dtype=torch.int64), ("attention_mask",)),
    ("all-false", torch.zeros((2, 3), dtype=torch.bool), ("attention_mask",)),
]


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("meta-errors")
@pytest.mark.parametrize("case", BAD_MASKS, ids=[c[0] for c in BAD_MASKS])
def test_build_packed_sequence_metadata_rejects(backend, case):
    """Upstream's two ValueErrors (a mask that is not 2-D, a mask without a valid token),
    each naming attention_mask (and the shape given when it is not 2-D)."""
    _, mask, facts = case
    assert_raises(ValueError, facts, backend.build_packed_sequence_metadata, mask, clause="meta-errors")


@pytest.mark.requires("unpad_data")
@pytest.mark.clause("unpad-errors")
@pytest.mark.parametrize("case", BAD_MASKS, ids=[c[0] for c in BAD_MASKS])
def test_get_unpad_data_rejects(backend, case):
    """Upstream's two ValueErrors (a mask that is not 2-D, a mask without a valid token),
    each naming attention_mask (and the shape given when it is not 2-D)."""
    _, mask, facts = case
    assert_raises(ValueError, facts, backend.get_unpad_data, mask, clause="unpad-errors")


# (case id, mask, indices, cu_seqlens, max_seqlen) outside the caller's id order: an id split
# by another id, ids decreasing along the row. Nothing is checked; the rules still apply.
UNORDERED_IDS = [
    ("split-id", long([[1, 2, 1]]), long([0, 1, 2]), int32([0, 2, 3]), 2),
    ("decreasing-ids", long([[2, 2, 1, 1, 1]]), long([0, 1, 2, 3, 4]), int32([0, 3, 5]), 3),
]


@pytest.mark.requires("unpad_data")
@pytest.mark.clause("unpad-precondition")
@pytest.mark.parametrize("case", UNORDERED_IDS, ids=[c[0] for c in UNORDERED_IDS])
def test_get_unpad_data_does_not_check_the_id_order(backend, case):
    """Per (row, id) counts, exactly as [unpad-indexed] defines them, and no error."""
    _, mask, indices, cu_seqlens, max_seqlen = case
    call = f"get_unpad_data({mask.tolist()})"
    got_indices, got_cu, got_max = backend.get_unpad_data(mask)
    assert_tensor_equal("indices", got_indices, indices, clause="unpad-precondition", call=call)
    assert_tensor_equal("cu_seqlens", got_cu, cu_seqlens, clause="unpad-precondition", call=call)
    assert got_max == max_seqlen and type(got_max) is int, (
        f"max_seqlen={got_max!r}, but should be {max_seqlen} [unpad-precondition: {call}]"
    )


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("unpad-precondition")
@pytest.mark.parametrize("case", UNORDERED_IDS, ids=[c[0] for c in UNORDERED_IDS])
def test_build_packed_sequence_metadata_does_not_check_the_id_order(backend, case):
    """Row-local indices and per-id cu_seqlens, exactly as [meta-indices]/[meta-cu-seqlens] define them."""
    _, mask, indices, cu_seqlens, max_seqlen = case
    call = f"build_packed_sequence_metadata({mask.tolist()})"
    out = backend.build_packed_sequence_metadata(mask)
    assert_tensor_equal(
        "packed_token_indices",
        out["packed_token_indices"],
        indices.unsqueeze(0),
        clause="unpad-precondition",
        call=call,
    )
    assert_tensor_equal(
        "cu_seqlens", out["cu_seqlens"], cu_seqlens.unsqueeze(0), clause="unpad-precondition", call=call
    )
    assert out["max_seqlen"] == max_seqlen, (
        f"max_seqlen={out['max_seqlen']!r}, but should be {max_seqlen} [unpad-precondition: {call}]"
    )
