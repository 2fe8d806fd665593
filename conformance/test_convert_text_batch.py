"""Golden cases and bad inputs for ``convert_text_batch`` (SPEC.md, "``TrainingBatch`` fields"
and "``convert_text_batch``").

Every expected value below was written by hand from the SPEC's rules (its worked examples A,
B and F), not produced by any implementation.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from conformance._asserts import Value, assert_batch_equal, assert_raises, assert_tensor_equal
from conformance._examples import (
    EXAMPLE_A,
    EXAMPLE_ROWS,
    F,
    T,
    convert,
    long,
)
from conformance._zephon import Contract, Row, describe_rows, packed_row, sample_batch


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-segment-starts")
def test_example_b_mask_segment_starts(backend):
    """Example B: labels whose target starts a subdocument become ignore_index."""
    out = convert(backend, EXAMPLE_ROWS, mask_segment_starts=True)
    expected = dict(EXAMPLE_A)
    expected["labels"] = long([[12, 13, -100, 22, -100, 32, -100, -100], [42, 43, 44, 45, -100, 52, 53, -100]])
    assert_batch_equal(out, expected, clause="ctb-segment-starts", call="Example B, mask_segment_starts=True")


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("batched-metadata", "batched-block-causal")
def test_block_causal_with_metadata(backend):
    """A block-causal contract that requests metadata gets the mask and the bundle."""
    contract = Contract(packed_mask_type="block_causal", return_packed_sequence_metadata=True)
    out = convert(backend, EXAMPLE_ROWS, contract)
    assert_tensor_equal(
        "attention_mask", out["attention_mask"], EXAMPLE_A["attention_mask"], clause="batched-block-causal"
    )
    assert_tensor_equal(
        "cu_seqlens",
        out["cu_seqlens"],
        torch.tensor([[0, 3, 5, 7], [0, 5, 8, -1]], dtype=torch.int32),
        clause="batched-metadata",
    )
    assert out["max_seqlen"] == 5 and type(out["max_seqlen"]) is int, (
        f"max_seqlen={out['max_seqlen']!r}, but should be int 5 [batched-metadata]"
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-ignore-index")
@pytest.mark.parametrize("ignore_index", [-1, 7, -123456])
def test_ignore_index_is_written_verbatim(backend, ignore_index):
    """Masked labels hold exactly the given ignore_index, whatever its value."""
    out = convert(backend, EXAMPLE_ROWS, ignore_index=ignore_index, mask_segment_starts=True)
    x = ignore_index
    expected = long([[12, 13, x, 22, x, 32, x, x], [42, 43, 44, 45, x, 52, 53, x]])
    assert_tensor_equal("labels", out["labels"], expected, clause="ctb-ignore-index", call=f"ignore_index={x}")


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids")
def test_pad_token_value_inside_real_text_keeps_its_label(backend):
    """A real token equal to the pad id is not padding: padding is found by position."""
    rows = [Row(tokens=(5, 0, 6, 0, 7, 0, 0), positions=(0, 1, 2, 3, 4, 0, 1), padding_length=2)]
    out = convert(backend, rows)
    assert_tensor_equal("labels", out["labels"], long([[0, 6, 0, 7, -100, -100]]), clause="ctb-padding-labels")
    assert_tensor_equal(
        "padding_mask", out["padding_mask"], torch.tensor([[F, F, F, F, F, T]]), clause="ctb-padding-mask"
    )
    assert_tensor_equal("document_ids", out["document_ids"], long([[1, 1, 1, 1, 1, 0]]), clause="ctb-document-ids")


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-positions", "ctb-document-ids", "ctb-padding-labels")
def test_record_without_positions_or_padding_is_one_document(backend):
    """No positions means one document (0..L-1); padding_length None means no padding."""
    rows = [Row(tokens=(3, 4, 5, 6), positions=None, padding_length=None)]
    out = convert(backend, rows)
    expected = {
        "input_ids": long([[3, 4, 5]]),
        "labels": long([[4, 5, 6]]),
        "position_ids": long([[0, 1, 2]]),
        "padding_mask": torch.tensor([[F, F, F]]),
        "document_ids": long([[1, 1, 1]]),
    }
    assert_batch_equal(out, expected, clause="ctb-positions", call=describe_rows(rows))


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids", "batched-block-causal")
def test_all_but_one_token_padding(backend):
    """A row whose only real token is the first: every label is ignored, one real input."""
    rows = [packed_row([[9]], padding=3)]  # tokens [9,0,0,0], positions [0,0,1,2]
    out = convert(backend, rows)
    expected = {
        "input_ids": long([[9, 0, 0]]),
        "labels": long([[-100, -100, -100]]),
        "position_ids": long([[0, 0, 1]]),
        "padding_mask": torch.tensor([[F, T, T]]),
        "document_ids": long([[1, 0, 0]]),
        "attention_mask": torch.tensor([[[[T, F, F], [F, F, F], [F, F, F]]]]),
    }
    assert_batch_equal(out, expected, clause="ctb-padding-labels", call=describe_rows(rows))


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-shift", "ctb-segment-starts", "ctb-cross-document-targets", "ctb-document-ids", "tb-shapes")
def test_single_token_sequence_many_tiny_documents(backend):
    """S = 1 and one-token documents: [7][8] packed into L = 2."""
    rows = [packed_row([[7], [8]], padding=0)]  # tokens [7,8], positions [0,0]
    kept = convert(backend, rows)
    masked = convert(backend, rows, mask_segment_starts=True)
    assert_tensor_equal("labels", kept["labels"], long([[8]]), clause="ctb-cross-document-targets")
    assert_tensor_equal("labels", masked["labels"], long([[-100]]), clause="ctb-segment-starts")
    assert_tensor_equal("document_ids", kept["document_ids"], long([[1]]), clause="ctb-document-ids")


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-no-mutation")
def test_example_input_is_not_mutated(backend):
    """The SampleBatch's payloads and meta are unchanged, and outputs do not alias them."""
    sb = sample_batch(EXAMPLE_ROWS)
    before = [(copy.deepcopy(r.payload), copy.deepcopy(r.meta.tags)) for r in sb.records]
    out = backend.convert_text_batch(sb, Contract(), -100, True, False)
    out["input_ids"].fill_(-5)
    out["position_ids"].fill_(-5)
    for (payload, tags), record in zip(before, sb.records):
        assert record.payload["input_ids"] == payload["input_ids"], "payload input_ids changed [ctb-no-mutation]"
        assert np.array_equal(record.payload["positions"], payload["positions"]), (
            "payload positions changed [ctb-no-mutation]"
        )
        assert record.payload["positions"].dtype == np.int32, "payload positions dtype changed [ctb-no-mutation]"
        assert record.meta.tags == tags, "meta tags changed [ctb-no-mutation]"


# ---------------------------------------------------------------- bad input ----

GOOD = EXAMPLE_ROWS[0]  # L = 9
NINE = tuple(range(1, 10))
ERROR_CASES = [
    # (case id, rows, error type, facts the message must name: a record's index as an int,
    # field names as whole words, lengths as ints; see conformance/_asserts.py names(), the
    # [ctb-input-errors] item). A bad record sits at index 2, behind two good ones, so its
    # index is not a number the message would hold anyway.
    ("empty-batch", [], ValueError, ("sample_batch",), 2),
    ("one-token-row", [Row((5,), (0,), 0)], ValueError, (0,), 7),
    ("ragged-rows", [GOOD, GOOD, Row((1, 2, 3), (0, 1, 2), 0)], ValueError, (9, 3), 8),
    ("positions-too-short", [GOOD, GOOD, Row(NINE, tuple(range(8)), 0)], ValueError, (2, "positions"), 9),
    ("positions-not-starting-at-0", [GOOD, GOOD, Row(NINE, tuple(range(1, 10)), 0)], ValueError, (2, "positions"), 10),
    ("negative-position", [GOOD, GOOD, Row(NINE, (0, 1, -1, 0, 1, 2, 3, 4, 5), 0)], ValueError, (2, "positions"), 10),
    ("padding-bool", [GOOD, GOOD, Row(NINE, tuple(range(9)), True)], TypeError, (2, "padding_length"), 11),
    ("no-real-token", [GOOD, GOOD, Row((0,) * 9, tuple(range(9)), 9)], ValueError, (2, "padding_length"), 12),
    ("padding-longer-than-row", [GOOD, GOOD, Row(NINE, tuple(range(9)), 10)], ValueError, (2, "padding_length"), 12),
    ("negative-padding", [GOOD, GOOD, Row(NINE, tuple(range(9)), -1)], ValueError, (2, "padding_length"), 12),
]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors")
@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c[0], marks=pytest.mark.clause(f"ctb-input-errors.{c[4]}")) for c in ERROR_CASES]
)
def test_bad_rows_are_rejected(backend, case):
    """Malformed SampleBatches raise the SPEC's error, naming the record and field."""
    _, rows, error, words, item = case
    assert_raises(
        error,
        words,
        backend.convert_text_batch,
        sample_batch(rows),
        Contract(),
        -100,
        False,
        False,
        clause=f"ctb-input-errors.{item}",
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors.11")
@pytest.mark.parametrize("value", ["1", 1.0], ids=["str", "float"])
def test_a_padding_length_that_is_not_an_int_is_a_type_error(backend, value):
    """``meta.padding_length`` of record 2 set to a non-int after the batch is built."""
    sb = sample_batch([GOOD, GOOD, Row(NINE, tuple(range(9)), 1)])
    sb.records[2].meta.tags["_packing_metadata"]["padding_length"] = value  # what meta.padding_length reads
    assert_raises(
        TypeError,
        (2, "padding_length"),
        backend.convert_text_batch,
        sb,
        Contract(),
        -100,
        False,
        False,
        clause="ctb-input-errors.11",
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors", "ctb-token-field")
def test_non_integer_tokens_and_missing_token_field_are_rejected(backend):
    """Float tokens raise TypeError; a payload with no token field raises ValueError."""
    sb = sample_batch([Row((1, 2, 3), (0, 1, 2), 0)])
    sb.records[0].payload["input_ids"] = [1.5, 2.0, 3.0]
    assert_raises(
        TypeError,
        (0, "input_ids"),
        backend.convert_text_batch,
        sb,
        Contract(),
        -100,
        False,
        False,
        clause="ctb-input-errors",
    )
    sb = sample_batch([Row((1, 2, 3), (0, 1, 2), 0)])
    sb.records[0].payload["text"] = sb.records[0].payload.pop("input_ids")
    assert_raises(
        ValueError,
        ("input_ids", "tokens", "token_ids", "ids"),
        backend.convert_text_batch,
        sb,
        Contract(),
        -100,
        False,
        False,
        clause="ctb-token-field",
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors")
def test_not_a_sample_batch_is_rejected(backend):
    """A plain list is not a SampleBatch."""
    assert_raises(
        TypeError,
        ("sample_batch",),
        backend.convert_text_batch,
        [[1, 2, 3]],
        Contract(),
        -100,
        False,
        False,
        clause="ctb-input-errors",
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-token-field")
@pytest.mark.parametrize("field", ["tokens", "token_ids", "ids"])
def test_token_field_detection(backend, field):
    """Offline exports may name the token field tokens/token_ids/ids, like Zephon detects."""
    sb = sample_batch([Row((4, 5, 6), (0, 1, 0), 0)])
    sb.records[0].payload[field] = sb.records[0].payload.pop("input_ids")
    out = backend.convert_text_batch(sb, Contract(), -100, False, False)
    assert_tensor_equal("input_ids", out["input_ids"], long([[4, 5]]), clause="ctb-token-field", call=field)
    assert_tensor_equal("labels", out["labels"], long([[5, 6]]), clause="ctb-token-field", call=field)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("types-output-format")
@pytest.mark.parametrize("output_format", ["BSHD", "", None, "Batched"])
def test_unknown_output_format_is_rejected(backend, output_format):
    """Only "batched" and "thd" are output formats: the message names the parameter, the
    allowed values and the value given."""
    assert_raises(
        ValueError,
        ("output_format", "batched", "thd", Value(output_format)),
        backend.convert_text_batch,
        sample_batch(EXAMPLE_ROWS),
        Contract(),
        -100,
        False,
        False,
        output_format,
        clause="types-output-format",
    )


OPTION_ERRORS = [
    ("ignore-index-float", {"ignore_index": -100.5}, ("ignore_index",)),
    ("ignore-index-none", {"ignore_index": None}, ("ignore_index",)),
    ("ignore-index-bool", {"ignore_index": True}, ("ignore_index",)),
    ("mask-segment-starts-str", {"mask_segment_starts": "no"}, ("mask_segment_starts",)),
    ("mask-segment-starts-int", {"mask_segment_starts": 1}, ("mask_segment_starts",)),
    ("xdoc-str", {"allow_cross_document_attention": "no"}, ("allow_cross_document_attention",)),
    ("xdoc-none", {"allow_cross_document_attention": None}, ("allow_cross_document_attention",)),
]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-option-types")
@pytest.mark.parametrize("case", OPTION_ERRORS, ids=[c[0] for c in OPTION_ERRORS])
def test_option_types_are_checked(backend, case):
    """A truthy string never switches a policy on; ignore_index must be an int."""
    _, override, words = case
    options = {"ignore_index": -100, "mask_segment_starts": False, "allow_cross_document_attention": False}
    options.update(override)
    assert_raises(
        TypeError,
        words,
        backend.convert_text_batch,
        sample_batch(EXAMPLE_ROWS),
        Contract(),
        options["ignore_index"],
        options["mask_segment_starts"],
        options["allow_cross_document_attention"],
        clause="ctb-option-types",
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors")
@pytest.mark.parametrize(
    "tokens, error",
    [([1, None, 3], TypeError), (["1", "2", "3"], TypeError), ("abc", TypeError), ([1, 2**63, 3], ValueError)],
    ids=["none", "strings", "string", "overflow"],
)
def test_unusable_token_values_name_the_record_and_field(backend, tokens, error):
    """None, strings and values outside int64 are rejected with the record and field named."""
    sb = sample_batch([Row((1, 2, 3), (0, 1, 2), 0), Row((1, 2, 3), (0, 1, 2), 0)])
    sb.records[1].payload["input_ids"] = tokens
    assert_raises(
        error,
        (1, "input_ids"),
        backend.convert_text_batch,
        sb,
        Contract(),
        -100,
        False,
        False,
        clause="ctb-input-errors",
    )


# ---------------------------------------------------------- records without positions ----

NO_POSITIONS = [
    Row((5, 6, 7, 0, 0), None, 2),  # real 0 1 2, pad tail 0 1
    Row((5, 6, 0, 0, 0), None, 3),  # real 0 1, pad tail 0 1 2
    Row((1, 2, 3, 4, 5), None, None),  # no padding: 0 .. 4
]
NO_POSITIONS_EXPECTED = {
    "input_ids": long([[5, 6, 7, 0], [5, 6, 0, 0], [1, 2, 3, 4]]),
    "labels": long([[6, 7, -100, -100], [6, -100, -100, -100], [2, 3, 4, 5]]),
    "position_ids": long([[0, 1, 2, 0], [0, 1, 0, 1], [0, 1, 2, 3]]),
    "padding_mask": torch.tensor([[F, F, F, T], [F, F, T, T], [F, F, F, F]]),
    "document_ids": long([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]),
    "attention_document_ids": long([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]),
}


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-positions", "ctb-document-ids", "ctb-padding-mask", "ctb-padding-labels")
def test_record_without_positions_restarts_its_pad_tail(backend):
    """A record without positions is one document 0 .. L-n-1 over its real tokens, and its pad
    tail restarts at 0 (0 .. n-1), as pack_flat numbers padding: [5,6,7,0,0] with n = 2 gives
    position_ids [[0,1,2,0]]."""
    out = convert(backend, NO_POSITIONS)
    assert_batch_equal(out, NO_POSITIONS_EXPECTED, clause="ctb-positions", call=describe_rows(NO_POSITIONS))


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-positions")
@pytest.mark.parametrize("padding", [0, 1, 2, 4])
def test_record_without_positions_equals_its_pack_flat_form(backend, padding):
    """Dropping positions from a one-document pack_flat record changes nothing: both forms give
    the same batch (positions 0 .. L-n-1, then the pad tail's 0 .. n-1)."""
    packed = packed_row([[3, 1, 4, 1, 5]], padding=padding)
    bare = Row(packed.tokens, None, packed.padding_length)
    call = f"{describe_rows([bare])} vs {describe_rows([packed])}"
    assert_batch_equal(convert(backend, [bare]), convert(backend, [packed]), clause="ctb-positions", call=call)
