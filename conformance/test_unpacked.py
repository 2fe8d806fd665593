"""The unpacked route: ``pad_to_length`` and ``pad_token_id`` (SPEC.md, "The unpacked
route"). Expected values are written by hand (the SPEC's worked example E)."""

from __future__ import annotations

import pytest
import torch

from conformance._asserts import assert_batch_equal, assert_raises
from conformance._examples import EXAMPLE_ROWS, F, T, block_mask, convert, long
from conformance._zephon import Contract, Row

DOCUMENTS = [Row((5, 6, 7), None, None), Row((8, 9, 10, 11, 12), None, None)]
EXAMPLE_E = {
    "input_ids": long([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]]),
    "labels": long([[6, 7, -100, -100, -100], [9, 10, 11, 12, -100]]),
    "position_ids": long([[0, 1, 2, 0, 1], [0, 1, 2, 3, 4]]),
    "padding_mask": torch.tensor([[F, F, F, T, T], [F, F, F, F, F]]),
    "document_ids": long([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]),
    "attention_document_ids": long([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]),
    "_packed_seq_ids": long([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]),
    "attention_mask": block_mask(
        "1.... 11... 111.. ..... .....",
        "1.... 11... 111.. 1111. 11111",
    ),
}


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-padding", "unpacked-same-route", "tb-shapes")
def test_example_e_pad_to_length(backend):
    """Example E: two unpacked documents right-padded to 6 unshifted tokens."""
    out = convert(backend, DOCUMENTS, pad_to_length=6, pad_token_id=0)
    assert_batch_equal(out, EXAMPLE_E, clause="unpacked-padding", call="Example E, pad_to_length=6, pad_token_id=0")


@pytest.mark.requires("convert_text_batch", "unpacked", "packed_metadata")
@pytest.mark.clause("unpacked-same-route", "batched-metadata")
def test_unpacked_rows_honour_the_contract(backend):
    """The contract's mask type and metadata request apply to unpacked rows too (A13)."""
    out = convert(backend, DOCUMENTS, Contract("document_ids", True), pad_to_length=6, pad_token_id=0)
    expected = {
        "attention_mask": long([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]),
        "packed_token_indices": long([[0, 1, 2, -1, -1], [0, 1, 2, 3, 4]]),
        "cu_seqlens": torch.tensor([[0, 3], [0, 5]], dtype=torch.int32),
        "max_seqlen": 5,
    }
    assert_batch_equal(
        out, expected, clause="unpacked-same-route", call="Example E with Contract('document_ids', True)"
    )


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-padding")
def test_pad_token_id_fills_the_padding_and_nothing_else(backend):
    """pad_token_id=99 changes only the pad slots of input_ids."""
    out = convert(backend, DOCUMENTS, pad_to_length=6, pad_token_id=99)
    expected = dict(EXAMPLE_E, input_ids=long([[5, 6, 7, 99, 99], [8, 9, 10, 11, 12]]))
    assert_batch_equal(out, expected, clause="unpacked-padding", call="Example E with pad_token_id=99")


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-padding")
def test_padding_a_packed_row_extends_its_pad_tail(backend):
    """A record with padding already: appended pads continue the tail's positions."""
    rows = [Row((1, 2, 3, 0), (0, 1, 0, 0), 1)]  # two documents [1,2] [3] and one pad token
    out = convert(backend, rows, pad_to_length=6, pad_token_id=0)
    expected = {
        "input_ids": long([[1, 2, 3, 0, 0]]),
        "labels": long([[2, 3, -100, -100, -100]]),
        "position_ids": long([[0, 1, 0, 0, 1]]),
        "padding_mask": torch.tensor([[F, F, F, T, T]]),
        "document_ids": long([[1, 1, 2, 0, 0]]),
    }
    assert_batch_equal(out, expected, clause="unpacked-padding", call="Row((1,2,3,0),(0,1,0,0),1), pad_to_length=6")


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-pad-token-only-with-length")
def test_pad_token_id_without_pad_to_length_is_ignored(backend):
    """A14: the loader always passes the model's pad id; without pad_to_length it does nothing."""
    plain = convert(backend, EXAMPLE_ROWS)
    with_pad = convert(backend, EXAMPLE_ROWS, pad_token_id=7)
    assert_batch_equal(with_pad, plain, clause="unpacked-pad-token-only-with-length", call="pad_token_id=7 alone")
    assert set(with_pad) == set(plain)


UNPACKED_ERRORS = [
    ("no-pad-token", {"pad_to_length": 6, "pad_token_id": None}, ValueError, ("pad_token_id",)),
    ("pad-token-not-int", {"pad_to_length": 6, "pad_token_id": "0"}, TypeError, ("pad_token_id",)),
    ("length-not-int", {"pad_to_length": 6.0, "pad_token_id": 0}, TypeError, ("pad_to_length",)),
    ("length-below-2", {"pad_to_length": 1, "pad_token_id": 0}, ValueError, ("pad_to_length",)),
    ("document-too-long", {"pad_to_length": 4, "pad_token_id": 0}, ValueError, (1, 5, 4, "pad_to_length")),
]


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-errors")
@pytest.mark.parametrize("case", UNPACKED_ERRORS, ids=[c[0] for c in UNPACKED_ERRORS])
def test_unpacked_bad_parameters(backend, case):
    """Bad pad_to_length / pad_token_id, or a document that does not fit, raise naming the parameter."""
    _, kwargs, error, words = case
    assert_raises(error, words, convert, backend, DOCUMENTS, clause="unpacked-errors", **kwargs)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors")
def test_ragged_rows_need_pad_to_length(backend):
    """Example E's documents without pad_to_length are ragged: ValueError listing the lengths."""
    assert_raises(ValueError, (3, 5), convert, backend, DOCUMENTS, clause="ctb-input-errors")


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-padding", "ctb-positions")
def test_padding_a_record_without_positions_extends_its_pad_tail(backend):
    """A record without positions that already has padding ([5,6,7,0], n = 1: pad tail [0]): the
    appended pads continue its tail (1, 2), and the result equals the same record pre-padded to
    [5,6,7,0,0,0] (n = 3, pad tail 0 1 2) and converted without pad_to_length."""
    row = Row((5, 6, 7, 0), None, 1)
    pre_padded = Row((5, 6, 7, 0, 0, 0), None, 3)
    expected = {
        "input_ids": long([[5, 6, 7, 0, 0]]),
        "labels": long([[6, 7, -100, -100, -100]]),
        "position_ids": long([[0, 1, 2, 0, 1]]),
        "padding_mask": torch.tensor([[F, F, F, T, T]]),
        "document_ids": long([[1, 1, 1, 0, 0]]),
    }
    call = "Row((5,6,7,0), None, 1), pad_to_length=6, pad_token_id=0"
    out = convert(backend, [row], pad_to_length=6, pad_token_id=0)
    assert_batch_equal(out, expected, clause="unpacked-padding", call=call)
    assert_batch_equal(
        out,
        convert(backend, [pre_padded]),
        clause="unpacked-padding",
        call=f"{call} vs Row((5,6,7,0,0,0), None, 3) without pad_to_length",
    )
