"""Golden cases from other systems' packing failures (the field reports of docs/sources.md).

Each test restates one public field report (F01-F15) as an input to our contract. Every
expected value is a literal copied from the field report (produced there by Zephon 0.2.0 or
upstream nemo-automodel 0.7.0 code and checked by hand), or, for the reports' metamorphic
lines, written here by hand from the same rules; none is computed by a backend.
The ``collate_datums``/``Datum`` parts (F05, F06, F08, F11, F12, F15) are in
``test_datum.py``; loader state (F16, F17) is in ``test_loader_state.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch
from zephon import SampleBatch

from conformance._asserts import assert_batch_equal, assert_raises, assert_tensor_equal
from conformance._examples import block_mask, bools, int32, long
from conformance._zephon import Contract, Row, describe_rows, sample_batch

F, T = False, True

DEFAULT = Contract()
META = Contract("block_causal", True)
META_DOC = Contract("document_ids", True)

# The keys of the THD route that must not appear in THD output [ctb-output-route].
BATCHED_ONLY_KEYS = ("attention_mask", "_packed_seq_ids", "packed_token_indices", "cu_seqlens", "max_seqlen")


def R(tok: Sequence[int], pos: Sequence[int], pad: int) -> Row:
    """A packed record: unshifted tokens, Zephon positions, trailing padding count."""
    return Row(tokens=tuple(tok), positions=tuple(pos), padding_length=pad)


def R0(tok: Sequence[int]) -> Row:
    """An unpacked record: no positions and no packing tag."""
    return Row(tuple(tok), None, None)


def ids3(values) -> dict[str, torch.Tensor]:
    """``document_ids`` = ``attention_document_ids`` = ``_packed_seq_ids`` (batched, xdoc off)."""
    return {"document_ids": long(values), "attention_document_ids": long(values), "_packed_seq_ids": long(values)}


def ids2(values) -> dict[str, torch.Tensor]:
    """``document_ids`` = ``attention_document_ids`` (THD output has no ``_packed_seq_ids``)."""
    return {"document_ids": long(values), "attention_document_ids": long(values)}


def ctb(
    backend,
    rows: Sequence[Row] | SampleBatch,
    contract=DEFAULT,
    *,
    msk: bool = False,
    xdoc: bool = False,
    fmt: str = "batched",
    pad_to_length: int | None = None,
    pad_token_id: int | None = None,
):
    """The field reports' ``ctb(...)``: ``convert_text_batch`` with ``ignore_index=-100``."""
    batch = rows if isinstance(rows, SampleBatch) else sample_batch(rows)
    return backend.convert_text_batch(batch, contract, -100, msk, xdoc, fmt, pad_to_length, pad_token_id)


def show(report: str, rows: Sequence[Row], **options) -> str:
    """A reproducible description of a call, for failure messages."""
    extra = "".join(f", {k}={v!r}" for k, v in options.items())
    return f"{report}: ctb({describe_rows(rows)}{extra})"


def assert_no_batched_keys(out, *, clause: str, call: str) -> None:
    __tracebackhide__ = True
    present = [key for key in BATCHED_ONLY_KEYS if key in out]
    assert not present, f"THD output holds {present}, but should hold none of them [{clause}: {call}]"


# ------------------------------------------------- boundaries, positions, labels ----

F01_ROW = R([11, 12, 13, 21, 22, 31, 0], [0, 1, 2, 0, 1, 0, 0], 1)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause(
    "ctb-shift",
    "ctb-positions",
    "ctb-padding-mask",
    "ctb-padding-labels",
    "ctb-document-ids",
    "ctb-attention-ids",
    "batched-packed-seq-ids",
    "ctb-boundaries-from-zeros",
    "ctb-segment-starts",
    "batched-metadata",
    "tb-dtypes",
)
def test_f01_packed_row_keeps_its_boundaries(backend):
    """F01: a packed row with positions gives three subdocuments, not one, in ids and metadata."""
    call = show("F01", [F01_ROW], contract=META)
    out = ctb(backend, [F01_ROW], META)
    expected = {
        "input_ids": long([[11, 12, 13, 21, 22, 31]]),
        "labels": long([[12, 13, 21, 22, 31, -100]]),
        "position_ids": long([[0, 1, 2, 0, 1, 0]]),
        "padding_mask": bools([[F, F, F, F, F, F]]),
        **ids3([[1, 1, 1, 2, 2, 3]]),
        "packed_token_indices": long([[0, 1, 2, 3, 4, 5]]),
        "cu_seqlens": int32([[0, 3, 5, 6]]),
        "max_seqlen": 3,
    }
    assert_batch_equal(out, expected, clause="ctb-document-ids", call=call)
    masked = ctb(backend, [F01_ROW], META, msk=True)
    assert_tensor_equal(
        "labels",
        masked["labels"],
        long([[12, 13, -100, 22, -100, -100]]),
        clause="ctb-segment-starts",
        call=call + ", msk",
    )


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("thd-lengths", "thd-qkv-format", "ctb-output-route")
def test_f01_thd_lengths_follow_the_boundaries(backend):
    """F01 THD: seq_lens [[3,2,1]]; the META contract's mask and metadata requests are ignored."""
    call = show("F01", [F01_ROW], contract=META, output_format="thd")
    out = ctb(backend, [F01_ROW], META, fmt="thd")
    expected = {
        "input_ids": long([[11, 12, 13, 21, 22, 31]]),
        "position_ids": long([[0, 1, 2, 0, 1, 0]]),
        **ids2([[1, 1, 1, 2, 2, 3]]),
        "seq_lens": long([[3, 2, 1]]),
        "seq_lens_padded": long([[3, 2, 1]]),
        "qkv_format": "thd",
    }
    assert_batch_equal(out, expected, clause="thd-lengths", call=call)
    assert_no_batched_keys(out, clause="ctb-output-route", call=call)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-positions", "ctb-document-ids", "batched-metadata")
def test_f01_record_without_positions_or_sequence_count_is_one_document(backend):
    """F01 'our version': no positions and a tag without num_sequences falls back to one document."""
    row = Row(F01_ROW.tokens, None, 1)
    sb = sample_batch([row])
    # The field report's R0-with-padding: the tag holds only padding_length, as in its notation.
    sb.records[0].meta.tags["_packing_metadata"] = {"padding_length": 1}
    out = ctb(backend, sb, META)
    expected = {
        "input_ids": long([[11, 12, 13, 21, 22, 31]]),
        "position_ids": long([[0, 1, 2, 3, 4, 5]]),
        **ids3([[1, 1, 1, 1, 1, 1]]),
        "cu_seqlens": int32([[0, 6]]),
        "max_seqlen": 6,
    }
    assert_batch_equal(
        out, expected, clause="ctb-positions", call="F01: record without positions, tag {padding_length: 1}"
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-packed-needs-positions")
def test_f01_packed_record_without_positions_is_rejected(backend):
    """F01 (decision D-4): num_sequences > 1 without positions raises ValueError naming the record."""
    sb = sample_batch([F01_ROW, F01_ROW])  # the tag of record 1 says num_sequences = 3
    assert sb.records[1].meta.tags["_packing_metadata"]["num_sequences"] == 3
    del sb.records[1].payload["positions"]
    assert_raises(
        ValueError,
        (1,),
        ctb,
        backend,
        sb,
        META,
        clause="ctb-packed-needs-positions",
    )


F02_ROW = R([5, 6, 7, 8, 9, 0], [0, 1, 2, 0, 1, 0], 1)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-positions", "ctb-boundaries-from-zeros", "ctb-segment-starts", "batched-metadata")
def test_f02_positions_are_zero_based_subdocument_coordinates(backend):
    """F02 (D-5): position_ids are 0-based per subdocument; the model adds any origin itself."""
    call = show("F02", [F02_ROW], contract=META)
    out = ctb(backend, [F02_ROW], META)
    expected = {
        "position_ids": long([[0, 1, 2, 0, 1]]),
        "labels": long([[6, 7, 8, 9, -100]]),
        **ids3([[1, 1, 1, 2, 2]]),
        "cu_seqlens": int32([[0, 3, 5]]),
        "max_seqlen": 3,
    }
    assert_batch_equal(out, expected, clause="ctb-positions", call=call)
    masked = ctb(backend, [F02_ROW], META, msk=True)
    assert_tensor_equal(
        "labels", masked["labels"], long([[6, 7, -100, 9, -100]]), clause="ctb-segment-starts", call=call + ", msk"
    )


F02_SHIFTED = [
    ("origin-2", [R([5, 6, 7, 8, 9, 0], [2, 3, 4, 2, 3, 2], 1)], 0),
    ("origin-1", [R([5, 6, 7, 8, 9, 0], [1, 2, 3, 1, 2, 1], 1)], 0),
    ("origin-1-second-record", [F02_ROW, R([5, 6, 7, 8, 9, 0], [1, 2, 3, 1, 2, 1], 1)], 1),
]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors", "ctb-positions")
@pytest.mark.parametrize("case", F02_SHIFTED, ids=[c[0] for c in F02_SHIFTED])
def test_f02_origin_shifted_positions_are_rejected(backend, case):
    """F02 negative: positions with a RoBERTa-style origin raise ValueError naming record and field."""
    _, rows, record = case
    assert_raises(ValueError, (record, "positions"), ctb, backend, rows, META, clause="ctb-input-errors")


F03_NO_ZERO = [
    ("no-zero-at-all", [R([1, 2, 3, 4, 5], [3, 4, 5, 6, 7], 0)], 0),
    ("zero-later", [R([1, 2, 3, 4, 5, 0], [3, 4, 0, 1, 2, 0], 1)], 0),
    (
        "zero-later-second-record",
        [R([1, 2, 3, 4, 5, 0], [0, 1, 2, 0, 1, 0], 1), R([1, 2, 3, 4, 5, 0], [3, 4, 0, 1, 2, 0], 1)],
        1,
    ),
]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors")
@pytest.mark.parametrize("case", F03_NO_ZERO, ids=[c[0] for c in F03_NO_ZERO])
def test_f03_row_not_starting_at_position_zero_is_rejected(backend, case):
    """F03 (D-3): a row whose first position is not 0 raises ValueError naming record and positions."""
    _, rows, record = case
    assert_raises(ValueError, (record, "positions"), ctb, backend, rows, META, clause="ctb-input-errors")


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-boundaries-from-zeros", "ctb-document-ids", "batched-metadata")
def test_f03_wrap_continuation_restarted_at_zero_is_a_new_subdocument(backend):
    """F03: a wrap continuation that Zephon restarts at 0 opens subdocument 2 of its row."""
    rows = [R([17, 18, 19, 20, 30, 31, 32], [0, 1, 2, 3, 0, 1, 2], 0)]
    out = ctb(backend, rows, META)
    expected = {
        "labels": long([[18, 19, 20, 30, 31, 32]]),
        **ids3([[1, 1, 1, 1, 2, 2]]),
        "cu_seqlens": int32([[0, 4, 6]]),
        "max_seqlen": 4,
    }
    assert_batch_equal(out, expected, clause="ctb-boundaries-from-zeros", call=show("F03", rows, contract=META))


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-boundaries-from-zeros", "ctb-positions", "ctb-document-ids", "batched-metadata")
def test_f03_position_jump_without_zero_is_not_a_boundary(backend):
    """F03: positions [0,1,2,5,6,...] are one subdocument; only a 0 opens a new one."""
    rows = [R([10, 11, 12, 13, 14, 15, 16], [0, 1, 2, 5, 6, 7, 8], 0)]
    out = ctb(backend, rows, META)
    expected = {
        "position_ids": long([[0, 1, 2, 5, 6, 7]]),
        **ids3([[1, 1, 1, 1, 1, 1]]),
        "cu_seqlens": int32([[0, 6]]),
        "max_seqlen": 6,
    }
    assert_batch_equal(out, expected, clause="ctb-boundaries-from-zeros", call=show("F03", rows, contract=META))


F04_ROW = R([1, 10, 11, 2, 1, 20, 21, 2, 1], [0, 1, 2, 3, 0, 1, 2, 3, 0], 0)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause(
    "ctb-cross-document-targets",
    "ctb-segment-starts",
    "ctb-shift",
    "ctb-document-ids",
    "batched-metadata",
)
def test_f04_cross_document_targets_kept_by_default(backend):
    """F04: msk off trains EOS->BOS across documents; msk on masks exactly those targets."""
    call = show("F04", [F04_ROW], contract=META)
    out = ctb(backend, [F04_ROW], META)
    expected = {
        "input_ids": long([[1, 10, 11, 2, 1, 20, 21, 2]]),
        "labels": long([[10, 11, 2, 1, 20, 21, 2, 1]]),
        "position_ids": long([[0, 1, 2, 3, 0, 1, 2, 3]]),
        **ids3([[1, 1, 1, 1, 2, 2, 2, 2]]),
        "cu_seqlens": int32([[0, 4, 8]]),
        "max_seqlen": 4,
    }
    assert_batch_equal(out, expected, clause="ctb-cross-document-targets", call=call)
    masked = ctb(backend, [F04_ROW], META, msk=True)
    assert_tensor_equal(
        "labels",
        masked["labels"],
        long([[10, 11, 2, -100, 20, 21, 2, -100]]),
        clause="ctb-segment-starts",
        call=call + ", msk",
    )


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("thd-lengths")
def test_f04_thd_lengths(backend):
    """F04 THD: two full documents give seq_lens = seq_lens_padded = [[4,4]]."""
    out = ctb(backend, [F04_ROW], META, fmt="thd")
    expected = {"seq_lens": long([[4, 4]]), "seq_lens_padded": long([[4, 4]]), "qkv_format": "thd"}
    assert_batch_equal(out, expected, clause="thd-lengths", call=show("F04", [F04_ROW], output_format="thd"))


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("ctb-xdoc", "ctb-segment-starts", "ctb-selected-ids", "xdoc-positions", "xdoc-attention-ids")
def test_f04_mask_segment_starts_under_xdoc_uses_original_boundaries(backend):
    """F04: msk + xdoc masks the original boundaries while positions and metadata span the row."""
    call = show("F04", [F04_ROW], contract=META, msk=True, xdoc=True)
    out = ctb(backend, [F04_ROW], META, msk=True, xdoc=True)
    expected = {
        "labels": long([[10, 11, 2, -100, 20, 21, 2, -100]]),
        "position_ids": long([[0, 1, 2, 3, 4, 5, 6, 7]]),
        "document_ids": long([[1, 1, 1, 1, 2, 2, 2, 2]]),
        "attention_document_ids": long([[1, 1, 1, 1, 1, 1, 1, 1]]),
        "_packed_seq_ids": long([[1, 1, 1, 1, 1, 1, 1, 1]]),
        "cu_seqlens": int32([[0, 8]]),
        "max_seqlen": 8,
    }
    assert_batch_equal(out, expected, clause="ctb-xdoc", call=call)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-cross-document-targets", "ctb-segment-starts")
def test_f04_cross_document_targets_without_special_tokens(backend):
    """F04 without BOS/EOS: the last token of doc 1 predicts doc 2's first unless msk is on."""
    rows = [R([10, 11, 20, 21, 0], [0, 1, 0, 1, 0], 1)]
    kept = ctb(backend, rows)
    masked = ctb(backend, rows, msk=True)
    assert_tensor_equal(
        "labels",
        kept["labels"],
        long([[11, 20, 21, -100]]),
        clause="ctb-cross-document-targets",
        call=show("F04", rows),
    )
    assert_tensor_equal(
        "labels",
        masked["labels"],
        long([[11, -100, 21, -100]]),
        clause="ctb-segment-starts",
        call=show("F04", rows, msk=True),
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-segment-starts", "ctb-padding-labels")
def test_f05_packed_row_target_never_crosses_into_the_next_rollout(backend):
    """F05 packed-row equivalent: with msk, rollout 1's last label is ignored, not rollout 2's token."""
    rows = [R([50, 51, 52, 60, 61, 0], [0, 1, 2, 0, 1, 0], 1)]
    out = ctb(backend, rows, msk=True)
    assert_tensor_equal(
        "labels",
        out["labels"],
        long([[51, 52, -100, 61, -100]]),
        clause="ctb-segment-starts",
        call=show("F05", rows, msk=True),
    )


# --------------------------------------------------------- padding and pad==eos ----

F06_ROWS = [R0([5, 6, 0]), R0([5, 0, 6, 0])]
F06_EXPECTED = {
    "input_ids": long([[5, 6, 0, 0, 0, 0], [5, 0, 6, 0, 0, 0]]),
    "labels": long([[6, 0, -100, -100, -100, -100], [0, 6, 0, -100, -100, -100]]),
    "padding_mask": bools([[F, F, F, T, T, T], [F, F, F, F, T, T]]),
    "position_ids": long([[0, 1, 2, 0, 1, 2], [0, 1, 2, 3, 0, 1]]),
    **ids3([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0]]),
    "attention_mask": block_mask(
        "1..... 11.... 111... ...... ...... ......",
        "1..... 11.... 111... 1111.. ...... ......",
    ),
}


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause(
    "unpacked-padding",
    "unpacked-same-route",
    "ctb-padding-labels",
    "ctb-padding-mask",
    "batched-block-causal",
)
def test_f06_pad_equals_eos_real_eos_keeps_its_label(backend):
    """F06: with pad == eos == 0, real EOS tokens keep their labels; padding comes from length only."""
    out = ctb(backend, F06_ROWS, pad_to_length=7, pad_token_id=0)
    assert_batch_equal(
        out, F06_EXPECTED, clause="ctb-padding-labels", call=show("F06", F06_ROWS, pad_to_length=7, pad_token_id=0)
    )


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-padding", "ctb-padding-labels", "ctb-padding-mask")
def test_f06_pad_token_id_only_changes_pad_slots(backend):
    """F06 metamorphic: pad_token_id=99 changes only the pad slots of input_ids."""
    out = ctb(backend, F06_ROWS, pad_to_length=7, pad_token_id=99)
    expected = dict(F06_EXPECTED)
    expected["input_ids"] = long([[5, 6, 0, 99, 99, 99], [5, 0, 6, 0, 99, 99]])
    assert_batch_equal(
        out, expected, clause="unpacked-padding", call=show("F06", F06_ROWS, pad_to_length=7, pad_token_id=99)
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids", "batched-block-causal")
def test_f06_pre_padded_rows_give_the_same_output(backend):
    """F06 pre-padded form: packed rows with pad == eos == 0 give F06's output without pad_to_length."""
    rows = [R([5, 6, 0, 0, 0, 0, 0], [0, 1, 2, 0, 1, 2, 3], 4), R([5, 0, 6, 0, 0, 0, 0], [0, 1, 2, 3, 0, 1, 2], 3)]
    out = ctb(backend, rows)
    assert_batch_equal(out, F06_EXPECTED, clause="ctb-padding-labels", call=show("F06", rows))


F07_COMPLETION_MASK = block_mask("1... 11.. 111. ....")
F07_PROMPT_MASK = block_mask("1..... 11.... 111... 1111.. 11111. ......")


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids", "batched-block-causal")
def test_f07_completion_with_pad_equal_eos_keeps_the_eos_target(backend):
    """F07 completion: pad == eos == 2; the real EOS target is trained, the pad tail is not."""
    rows = [R([70, 71, 2, 2, 2], [0, 1, 2, 0, 1], 2)]
    out = ctb(backend, rows)
    expected = {
        "input_ids": long([[70, 71, 2, 2]]),
        "labels": long([[71, 2, -100, -100]]),
        "padding_mask": bools([[F, F, F, T]]),
        **ids3([[1, 1, 1, 0]]),
        "position_ids": long([[0, 1, 2, 0]]),
        "attention_mask": F07_COMPLETION_MASK,
    }
    assert_batch_equal(out, expected, clause="ctb-padding-labels", call=show("F07", rows))


F07_PROMPT_ROW = R([7, 30, 2, 7, 40, 2, 2], [0, 1, 2, 3, 4, 0, 1], 2)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids", "batched-block-causal")
def test_f07_prompt_marker_equal_to_pad_id_is_real(backend):
    """F07 prompt: a chat marker whose id equals the pad id is a real token, not padding."""
    out = ctb(backend, [F07_PROMPT_ROW])
    expected = {
        "input_ids": long([[7, 30, 2, 7, 40, 2]]),
        "labels": long([[30, 2, 7, 40, -100, -100]]),
        "padding_mask": bools([[F, F, F, F, F, T]]),
        **ids3([[1, 1, 1, 1, 1, 0]]),
        "attention_mask": F07_PROMPT_MASK,
    }
    assert_batch_equal(out, expected, clause="ctb-padding-labels", call=show("F07", [F07_PROMPT_ROW]))


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("thd-lengths")
def test_f07_prompt_thd_padding_joins_the_last_subdocument(backend):
    """F07 prompt THD: seq_lens [[5]], seq_lens_padded [[6]]."""
    out = ctb(backend, [F07_PROMPT_ROW], fmt="thd")
    expected = {"seq_lens": long([[5]]), "seq_lens_padded": long([[6]]), "qkv_format": "thd"}
    assert_batch_equal(out, expected, clause="thd-lengths", call=show("F07", [F07_PROMPT_ROW], output_format="thd"))


# The pad id drawn from the vocabulary: eos, and ids that occur in the text. Only the pad slots
# of input_ids change; labels, padding_mask, document_ids and the mask stay as in F07.
F07_PAD_IDS = [0, 2, 7, 30, 40, 70, 71]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids", "batched-block-causal")
@pytest.mark.parametrize("pad_id", F07_PAD_IDS)
def test_f07_pad_id_drawn_from_vocabulary_changes_nothing_but_pad_slots(backend, pad_id):
    """F07 property: any pad id, even one in the text, leaves labels, padding and the mask unchanged."""
    p = pad_id
    completion = [R([70, 71, 2, p, p], [0, 1, 2, 0, 1], 2)]
    out = ctb(backend, completion)
    expected = {
        "input_ids": long([[70, 71, 2, p]]),
        "labels": long([[71, 2, -100, -100]]),
        "padding_mask": bools([[F, F, F, T]]),
        **ids3([[1, 1, 1, 0]]),
        "attention_mask": F07_COMPLETION_MASK,
    }
    assert_batch_equal(out, expected, clause="ctb-padding-labels", call=show("F07", completion))
    prompt = [R([7, 30, 2, 7, 40, p, p], [0, 1, 2, 3, 4, 0, 1], 2)]
    out = ctb(backend, prompt)
    expected = {
        "input_ids": long([[7, 30, 2, 7, 40, p]]),
        "labels": long([[30, 2, 7, 40, -100, -100]]),
        "padding_mask": bools([[F, F, F, F, F, T]]),
        **ids3([[1, 1, 1, 1, 1, 0]]),
        "attention_mask": F07_PROMPT_MASK,
    }
    assert_batch_equal(out, expected, clause="ctb-padding-labels", call=show("F07", prompt))


F07_LEFT_PADDED = [
    ("left-padding", [[0, 0, 1, 1, 1, 1, 1]], 0),
    ("left-padding-second-row", [[1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1]], 1),
]


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("thd-errors")
@pytest.mark.parametrize("case", F07_LEFT_PADDED, ids=[c[0] for c in F07_LEFT_PADDED])
def test_f07_left_padding_is_rejected_by_thd_output(backend, case):
    """F07: left padding is out of contract; THD output of attention ids [[0,0,1,...]] raises."""
    _, ids, row = case
    batch = {"document_ids": long(ids), "attention_document_ids": long(ids)}
    assert_raises(ValueError, (row,), backend.convert_batch_output, batch, "thd", clause="thd-errors")


F08_ROWS = [R([10, 11, 2, 2, 2], [0, 1, 2, 0, 1], 2), R([20, 21, 22, 2, 30], [0, 1, 2, 3, 0], 0)]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause(
    "ctb-padding-labels",
    "ctb-padding-mask",
    "batched-document-ids-mask",
    "batched-metadata",
    "meta-indices",
)
def test_f08_gathering_real_tokens_keeps_eos_equal_to_pad(backend):
    """F08: packed_token_indices >= 0 gathers [10,11,2,20,21,22,2]; row 0's real EOS survives."""
    call = show("F08", F08_ROWS, contract=META_DOC)
    out = ctb(backend, F08_ROWS, META_DOC)
    expected = {
        "input_ids": long([[10, 11, 2, 2], [20, 21, 22, 2]]),
        "labels": long([[11, 2, -100, -100], [21, 22, 2, 30]]),
        "padding_mask": bools([[F, F, F, T], [F, F, F, F]]),
        "position_ids": long([[0, 1, 2, 0], [0, 1, 2, 3]]),
        **ids3([[1, 1, 1, 0], [1, 1, 1, 1]]),
        "attention_mask": long([[1, 1, 1, 0], [1, 1, 1, 1]]),
        "packed_token_indices": long([[0, 1, 2, -1], [0, 1, 2, 3]]),
        "cu_seqlens": int32([[0, 3], [0, 4]]),
        "max_seqlen": 4,
    }
    assert_batch_equal(out, expected, clause="batched-metadata", call=call)
    gathered = out["input_ids"][out["packed_token_indices"] >= 0]
    assert_tensor_equal(
        "input_ids[packed_token_indices >= 0]",
        gathered,
        long([10, 11, 2, 20, 21, 22, 2]),
        clause="meta-indices",
        call=call,
    )


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("thd-lengths", "ctb-output-route")
def test_f08_thd_lengths(backend):
    """F08 THD: seq_lens [[3],[4]], seq_lens_padded [[4],[4]]; no batched keys."""
    call = show("F08", F08_ROWS, contract=META_DOC, output_format="thd")
    out = ctb(backend, F08_ROWS, META_DOC, fmt="thd")
    expected = {"seq_lens": long([[3], [4]]), "seq_lens_padded": long([[4], [4]]), "qkv_format": "thd"}
    assert_batch_equal(out, expected, clause="thd-lengths", call=call)
    assert_no_batched_keys(out, clause="ctb-output-route", call=call)


# ---------------------------------------------------- attention masks and segments ----

F09_ROW = R([1, 2, 3, 4, 5, 0], [0, 1, 2, 0, 1, 0], 1)
F09_EXTRA = [
    ("no-extra-field", None),
    ("zephon-attention-mask", [1, 1, 1, 1, 1, 0]),
    ("all-ones-attention-mask", [1, 1, 1, 1, 1, 1]),
]
F09_KEYS = {
    "input_ids",
    "labels",
    "position_ids",
    "padding_mask",
    "document_ids",
    "attention_document_ids",
    "_packed_seq_ids",
    "attention_mask",
}


def f09_batch(extra) -> SampleBatch:
    sb = sample_batch([F09_ROW])
    if extra is not None:
        sb.records[0].payload["attention_mask"] = torch.tensor(extra)
    return sb


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-extra-payload-ignored", "batched-block-causal", "tb-keys")
@pytest.mark.parametrize("case", F09_EXTRA, ids=[c[0] for c in F09_EXTRA])
def test_f09_payload_attention_mask_does_not_switch_packed_masking_off(backend, case):
    """F09: a payload attention_mask (Zephon's, or all ones) changes nothing; the mask stays block-causal."""
    name, extra = case
    out = ctb(backend, f09_batch(extra))
    expected = {
        "input_ids": long([[1, 2, 3, 4, 5]]),
        "labels": long([[2, 3, 4, 5, -100]]),
        "position_ids": long([[0, 1, 2, 0, 1]]),
        **ids3([[1, 1, 1, 2, 2]]),
        "attention_mask": block_mask("1.... 11... 111.. ...1. ...11"),
    }
    call = f"F09: ctb({describe_rows([F09_ROW])}, payload attention_mask={extra})"
    assert_batch_equal(out, expected, clause="ctb-extra-payload-ignored", call=call)
    assert set(out) == F09_KEYS, f"keys {sorted(out)}, but should be {sorted(F09_KEYS)} [tb-keys: {call}]"


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-extra-payload-ignored", "batched-document-ids-mask", "batched-metadata")
@pytest.mark.parametrize("case", F09_EXTRA, ids=[c[0] for c in F09_EXTRA])
def test_f09_document_ids_contract_ignores_payload_attention_mask(backend, case):
    """F09 META_DOC: attention_mask is the ids [[1,1,1,2,2]] whatever the payload's attention_mask."""
    name, extra = case
    out = ctb(backend, f09_batch(extra), META_DOC)
    expected = {"attention_mask": long([[1, 1, 1, 2, 2]]), "cu_seqlens": int32([[0, 3, 5]]), "max_seqlen": 3}
    call = f"F09: ctb({describe_rows([F09_ROW])}, META_DOC, payload attention_mask={extra})"
    assert_batch_equal(out, expected, clause="ctb-extra-payload-ignored", call=call)


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("ctb-extra-payload-ignored", "ctb-xdoc", "ctb-selected-ids", "batched-block-causal")
@pytest.mark.parametrize("case", F09_EXTRA, ids=[c[0] for c in F09_EXTRA])
def test_f09_xdoc_joins_segments_on_purpose(backend, case):
    """F09 xdoc: the whole row attends causally (intended), whatever the payload's attention_mask."""
    name, extra = case
    out = ctb(backend, f09_batch(extra), xdoc=True)
    expected = {
        "position_ids": long([[0, 1, 2, 3, 4]]),
        "document_ids": long([[1, 1, 1, 2, 2]]),
        "attention_document_ids": long([[1, 1, 1, 1, 1]]),
        "attention_mask": block_mask("1.... 11... 111.. 1111. 11111"),
    }
    call = f"F09: ctb({describe_rows([F09_ROW])}, xdoc, payload attention_mask={extra})"
    assert_batch_equal(out, expected, clause="ctb-xdoc", call=call)


F10_ROW = R([1, 2, 3, 0, 0, 0, 0], [0, 1, 2, 0, 1, 2, 3], 4)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause(
    "ctb-padding-mask",
    "ctb-document-ids",
    "ctb-positions",
    "batched-block-causal",
    "batched-metadata",
)
def test_f10_padding_is_not_a_fake_segment(backend):
    """F10: padding has id 0, attends to nothing and is attended by nothing; cu_seqlens [[0,3]]."""
    out = ctb(backend, [F10_ROW], META)
    expected = {
        "input_ids": long([[1, 2, 3, 0, 0, 0]]),
        "labels": long([[2, 3, -100, -100, -100, -100]]),
        "position_ids": long([[0, 1, 2, 0, 1, 2]]),
        "padding_mask": bools([[F, F, F, T, T, T]]),
        **ids3([[1, 1, 1, 0, 0, 0]]),
        "attention_mask": block_mask("1..... 11.... 111... ...... ...... ......"),
        "packed_token_indices": long([[0, 1, 2, -1, -1, -1]]),
        "cu_seqlens": int32([[0, 3]]),
        "max_seqlen": 3,
    }
    assert_batch_equal(out, expected, clause="batched-block-causal", call=show("F10", [F10_ROW], contract=META))


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("thd-lengths")
def test_f10_thd_padding_joins_the_last_subdocument(backend):
    """F10 THD: seq_lens [[3]], seq_lens_padded [[6]] (padded boundaries [0,6], not [0,3,6])."""
    out = ctb(backend, [F10_ROW], META, fmt="thd")
    expected = {"seq_lens": long([[3]]), "seq_lens_padded": long([[6]]), "qkv_format": "thd"}
    assert_batch_equal(out, expected, clause="thd-lengths", call=show("F10", [F10_ROW], output_format="thd"))


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-padding-mask", "ctb-document-ids", "batched-block-causal", "batched-metadata")
def test_f10_longer_padding_leaves_real_tokens_unchanged(backend):
    """F10 metamorphic: six pad tokens instead of four keep the real prefix and cu_seqlens [[0,3]]."""
    rows = [R([1, 2, 3, 0, 0, 0, 0, 0, 0], [0, 1, 2, 0, 1, 2, 3, 4, 5], 6)]
    out = ctb(backend, rows, META)
    expected = {
        "input_ids": long([[1, 2, 3, 0, 0, 0, 0, 0]]),
        "labels": long([[2, 3, -100, -100, -100, -100, -100, -100]]),
        "position_ids": long([[0, 1, 2, 0, 1, 2, 3, 4]]),
        "padding_mask": bools([[F, F, F, T, T, T, T, T]]),
        **ids3([[1, 1, 1, 0, 0, 0, 0, 0]]),
        "attention_mask": block_mask("1....... 11...... 111..... ........ ........ ........ ........ ........"),
        "packed_token_indices": long([[0, 1, 2, -1, -1, -1, -1, -1]]),
        "cu_seqlens": int32([[0, 3]]),
        "max_seqlen": 3,
    }
    assert_batch_equal(out, expected, clause="batched-metadata", call=show("F10", rows, contract=META))


F11_ALL_PADDING = [R([1, 2, 3, 4, 5], [0, 1, 2, 3, 4], 0), R([0, 0, 0, 0, 0], [0, 1, 2, 3, 4], 5)]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors")
def test_f11_all_padding_row_is_rejected_batched(backend):
    """F11 (A11): a row with no real token raises ValueError naming record 1 and padding_length."""
    assert_raises(ValueError, (1, "padding_length"), ctb, backend, F11_ALL_PADDING, clause="ctb-input-errors")


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("ctb-input-errors")
def test_f11_all_padding_row_is_rejected_thd(backend):
    """F11 (A11) THD: the all-padding row raises the same ValueError in THD output."""
    assert_raises(
        ValueError, (1, "padding_length"), ctb, backend, F11_ALL_PADDING, fmt="thd", clause="ctb-input-errors"
    )


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("meta-errors", "meta-indices", "meta-cu-seqlens", "meta-max-seqlen")
def test_f11_metadata_tolerates_one_empty_row(backend):
    """F11 upstream tolerance: build_packed_sequence_metadata keeps an all-zero row beside a real one."""
    mask = long([[1, 1, 1, 1], [0, 0, 0, 0]])
    out = backend.build_packed_sequence_metadata(mask)
    expected = {
        "packed_token_indices": long([[0, 1, 2, 3], [-1, -1, -1, -1]]),
        "cu_seqlens": int32([[0, 4], [0, -1]]),
        "max_seqlen": 4,
    }
    call = f"F11: build_packed_sequence_metadata({mask.tolist()})"
    assert_batch_equal(out, expected, clause="meta-cu-seqlens", call=call)


F11_ONE_TOKEN_DOCS = [R([1, 2, 3, 0], [0, 0, 0, 0], 1)]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-segment-starts", "ctb-cross-document-targets", "ctb-document-ids", "batched-metadata")
def test_f11_zero_supervised_labels_is_legal(backend):
    """F11: three one-token documents with msk have no supervised label and still convert."""
    call = show("F11", F11_ONE_TOKEN_DOCS, contract=META, msk=True)
    out = ctb(backend, F11_ONE_TOKEN_DOCS, META, msk=True)
    expected = {
        "labels": long([[-100, -100, -100]]),
        "position_ids": long([[0, 0, 0]]),
        **ids3([[1, 2, 3]]),
        "cu_seqlens": int32([[0, 1, 2, 3]]),
        "max_seqlen": 1,
    }
    assert_batch_equal(out, expected, clause="ctb-segment-starts", call=call)
    kept = ctb(backend, F11_ONE_TOKEN_DOCS, META)
    assert_tensor_equal(
        "labels",
        kept["labels"],
        long([[2, 3, -100]]),
        clause="ctb-cross-document-targets",
        call=show("F11", F11_ONE_TOKEN_DOCS, contract=META),
    )


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("thd-lengths")
def test_f11_zero_supervised_labels_thd(backend):
    """F11 THD + msk: three one-token documents give seq_lens [[1,1,1]]."""
    out = ctb(backend, F11_ONE_TOKEN_DOCS, META, msk=True, fmt="thd")
    assert_batch_equal(
        out,
        {"labels": long([[-100, -100, -100]]), "seq_lens": long([[1, 1, 1]])},
        clause="thd-lengths",
        call=show("F11", F11_ONE_TOKEN_DOCS, msk=True, output_format="thd"),
    )


F12_ROW = R([1, 2, 3, 4, 5, 6, 0], [0, 1, 0, 1, 2, 0, 0], 1)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-boundaries-from-zeros", "ctb-segment-starts", "ctb-document-ids", "batched-metadata")
def test_f12_empty_documents_leave_no_zero_length_segment(backend):
    """F12: documents [1,2],[],[3,4,5],[],[6] packed by Zephon give cu_seqlens [[0,2,5,6]]."""
    call = show("F12", [F12_ROW], contract=META)
    out = ctb(backend, [F12_ROW], META)
    expected = {
        "labels": long([[2, 3, 4, 5, 6, -100]]),
        "position_ids": long([[0, 1, 0, 1, 2, 0]]),
        **ids3([[1, 1, 2, 2, 2, 3]]),
        "cu_seqlens": int32([[0, 2, 5, 6]]),
        "max_seqlen": 3,
    }
    assert_batch_equal(out, expected, clause="batched-metadata", call=call)
    masked = ctb(backend, [F12_ROW], META, msk=True)
    assert_tensor_equal(
        "labels",
        masked["labels"],
        long([[2, -100, 4, 5, -100, -100]]),
        clause="ctb-segment-starts",
        call=call + ", msk",
    )


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("thd-lengths")
def test_f12_thd_lengths_are_positive(backend):
    """F12 THD: seq_lens = seq_lens_padded = [[2,3,1]], no zero-length entry."""
    out = ctb(backend, [F12_ROW], META, fmt="thd")
    expected = {"seq_lens": long([[2, 3, 1]]), "seq_lens_padded": long([[2, 3, 1]]), "qkv_format": "thd"}
    assert_batch_equal(out, expected, clause="thd-lengths", call=show("F12", [F12_ROW], output_format="thd"))


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("meta-cu-seqlens", "meta-indices", "meta-max-seqlen", "unpad-precondition")
def test_f12_gapped_ids_leave_trailing_fill_not_zero_length_entries(backend):
    """F12 gapped ids [[1,1,3,3,0]]: cu_seqlens [[0,2,4,-1]], width = largest id + 1."""
    mask = long([[1, 1, 3, 3, 0]])
    out = backend.build_packed_sequence_metadata(mask)
    expected = {
        "packed_token_indices": long([[0, 1, 2, 3, -1]]),
        "cu_seqlens": int32([[0, 2, 4, -1]]),
        "max_seqlen": 2,
    }
    call = f"F12: build_packed_sequence_metadata({mask.tolist()})"
    assert_batch_equal(out, expected, clause="meta-cu-seqlens", call=call)


# ----------------------------------------------------------------- types and shapes ----

F13_ROW = R([11, 12, 13, 21, 22, 0], [0, 1, 2, 0, 1, 0], 1)


def f13_batch() -> SampleBatch:
    """F13's record with int32 torch payloads, as Zephon's pack_flat emits positions."""
    sb = sample_batch([F13_ROW])
    sb.records[0].payload["input_ids"] = torch.tensor([11, 12, 13, 21, 22, 0], dtype=torch.int32)
    sb.records[0].payload["positions"] = torch.tensor([0, 1, 2, 0, 1, 0], dtype=torch.int32)
    return sb


F13_CALL = "F13: ctb(R(int32 [11,12,13,21,22,0], int32 [0,1,2,0,1,0], 1), META)"


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("tb-dtypes", "tb-shapes", "batched-metadata", "meta-cu-seqlens", "meta-max-seqlen")
def test_f13_int32_payload_gives_contract_dtypes(backend):
    """F13: int32 payloads give int64 fields, bool masks, int32 cu_seqlens and a Python int max_seqlen."""
    out = ctb(backend, f13_batch(), META)
    # dtypes from the field report; values of the shift written by hand (they equal F01's prefix).
    expected = {
        "input_ids": long([[11, 12, 13, 21, 22]]),
        "labels": long([[12, 13, 21, 22, -100]]),
        "position_ids": long([[0, 1, 2, 0, 1]]),
        "padding_mask": bools([[F, F, F, F, F]]),
        **ids3([[1, 1, 1, 2, 2]]),
        "attention_mask": block_mask("1.... 11... 111.. ...1. ...11"),
        "packed_token_indices": long([[0, 1, 2, 3, 4]]),
        "cu_seqlens": int32([[0, 3, 5]]),
        "max_seqlen": 3,
    }
    assert_batch_equal(out, expected, clause="tb-dtypes", call=F13_CALL)


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("tb-dtypes", "thd-lengths", "thd-qkv-format")
def test_f13_int32_payload_thd_lengths_are_int64(backend):
    """F13 THD: seq_lens and seq_lens_padded are int64 [[3,2]]; qkv_format is a str."""
    out = ctb(backend, f13_batch(), META, fmt="thd")
    expected = {
        "input_ids": long([[11, 12, 13, 21, 22]]),
        "position_ids": long([[0, 1, 2, 0, 1]]),
        **ids2([[1, 1, 1, 2, 2]]),
        "seq_lens": long([[3, 2]]),
        "seq_lens_padded": long([[3, 2]]),
        "qkv_format": "thd",
    }
    assert_batch_equal(out, expected, clause="tb-dtypes", call=F13_CALL + ", thd")


F13_MASKS = [
    # (dtype, mask, packed_token_indices, cu_seqlens, max_seqlen)
    ("int32", torch.tensor([[1, 1, 1, 2, 2]], dtype=torch.int32), [[0, 1, 2, 3, 4]], [[0, 3, 5]], 3),
    ("int64", torch.tensor([[1, 1, 1, 2, 2]], dtype=torch.int64), [[0, 1, 2, 3, 4]], [[0, 3, 5]], 3),
    ("bool", torch.tensor([[T, T, T, T, F]], dtype=torch.bool), [[0, 1, 2, 3, -1]], [[0, 4]], 4),
]


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("meta-indices", "meta-cu-seqlens", "meta-max-seqlen", "unpad-binary")
@pytest.mark.parametrize("case", F13_MASKS, ids=[c[0] for c in F13_MASKS])
def test_f13_metadata_dtypes_do_not_follow_the_mask_dtype(backend, case):
    """F13 upstream: int32, int64 or bool masks all give int64 indices, int32 cu_seqlens, int max."""
    name, mask, indices, cu_seqlens, max_seqlen = case
    out = backend.build_packed_sequence_metadata(mask)
    expected = {"packed_token_indices": long(indices), "cu_seqlens": int32(cu_seqlens), "max_seqlen": max_seqlen}
    assert_batch_equal(
        out,
        expected,
        clause="meta-cu-seqlens",
        call=f"F13: build_packed_sequence_metadata({mask.tolist()}, dtype={name})",
    )


F14_ROW = R([1, 2, 3, 4, 5, 0, 0], [0, 1, 0, 1, 2, 0, 1], 2)  # text form of F14's segments


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("batched-block-causal", "ctb-document-ids", "ctb-positions")
def test_f14_second_segment_id_is_real_in_the_block_mask(backend):
    """F14: id 2 is a real segment (not padding); each segment keeps its own coordinates."""
    out = ctb(backend, [F14_ROW])
    expected = {
        "position_ids": long([[0, 1, 0, 1, 2, 0]]),
        "padding_mask": bools([[F, F, F, F, F, T]]),
        **ids3([[1, 1, 2, 2, 2, 0]]),
        "attention_mask": block_mask("1..... 11.... ..1... ..11.. ..111. ......"),
    }
    assert_batch_equal(out, expected, clause="batched-block-causal", call=show("F14", [F14_ROW]))


def f14_mapping() -> dict[str, torch.Tensor]:
    """F14's mapping before attention ids: mRoPE positions [3, 1, 6], every axis [0,1,0,1,2,0]."""
    return {
        "position_ids": long([[[0, 1, 0, 1, 2, 0]]] * 3),
        "document_ids": long([[1, 1, 2, 2, 2, 0]]),
        "padding_mask": bools([[F, F, F, F, F, T]]),
    }


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("adapt-attention-ids", "adapt-no-mutation")
def test_f14_adapt_model_inputs_keeps_segment_ids_and_mrope_positions(backend):
    """F14: adapt_model_inputs keeps id 2 as a segment and leaves mRoPE positions unchanged."""
    batch = f14_mapping()
    positions = batch["position_ids"]
    out = backend.adapt_model_inputs(batch)
    assert_tensor_equal(
        "input position_ids",
        positions,
        long([[[0, 1, 0, 1, 2, 0]]] * 3),
        clause="adapt-no-mutation",
        call="F14: adapt_model_inputs(mRoPE mapping)",
    )
    expected = {
        "position_ids": long([[[0, 1, 0, 1, 2, 0]]] * 3),
        "document_ids": long([[1, 1, 2, 2, 2, 0]]),
        "attention_document_ids": long([[1, 1, 2, 2, 2, 0]]),
    }
    assert_batch_equal(out, expected, clause="adapt-attention-ids", call="F14: adapt_model_inputs(mRoPE mapping)")


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-positions", "xdoc-attention-ids", "xdoc-untouched")
def test_f14_xdoc_numbers_mrope_segments_continuously(backend):
    """F14 (A16): enable_xdoc_attention turns every mRoPE axis into [0,1,2,3,4,0]."""
    batch = f14_mapping()
    batch["attention_document_ids"] = long([[1, 1, 2, 2, 2, 0]])  # as adapt_model_inputs gives it
    positions, attention_ids = batch["position_ids"], batch["attention_document_ids"]
    out = backend.enable_xdoc_attention(batch, DEFAULT)
    call = "F14: enable_xdoc_attention(mRoPE mapping, DEFAULT)"
    # No tensor that was in the mapping is modified in place [xdoc-untouched].
    assert_tensor_equal(
        "input position_ids", positions, long([[[0, 1, 0, 1, 2, 0]]] * 3), clause="xdoc-untouched", call=call
    )
    assert_tensor_equal(
        "input attention_document_ids", attention_ids, long([[1, 1, 2, 2, 2, 0]]), clause="xdoc-untouched", call=call
    )
    expected = {
        "position_ids": long([[[0, 1, 2, 3, 4, 0]]] * 3),
        "attention_document_ids": long([[1, 1, 1, 1, 1, 0]]),
        "document_ids": long([[1, 1, 2, 2, 2, 0]]),
        "padding_mask": bools([[F, F, F, F, F, T]]),
    }
    assert_batch_equal(out, expected, clause="xdoc-positions", call=call)


F15_ROW = R([11, 12, 13, 21, 22, 0, 0, 0, 0], [0, 1, 2, 0, 1, 0, 1, 2, 3], 4)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("tb-shapes", "ctb-positions", "ctb-padding-mask", "ctb-segment-starts", "batched-metadata")
def test_f15_every_per_token_field_has_the_packed_width(backend):
    """F15: a packed row of 8 inputs gives [1,8] per-token fields and a [1,1,8,8] mask."""
    call = show("F15", [F15_ROW], contract=META)
    out = ctb(backend, [F15_ROW], META)
    expected = {
        "input_ids": long([[11, 12, 13, 21, 22, 0, 0, 0]]),
        "labels": long([[12, 13, 21, 22, -100, -100, -100, -100]]),
        "position_ids": long([[0, 1, 2, 0, 1, 0, 1, 2]]),
        "padding_mask": bools([[F, F, F, F, F, T, T, T]]),
        **ids3([[1, 1, 1, 2, 2, 0, 0, 0]]),
        # written by hand from the ids above [batched-block-causal]
        "attention_mask": block_mask("1....... 11...... 111..... ...1.... ...11... ........ ........ ........"),
        "packed_token_indices": long([[0, 1, 2, 3, 4, -1, -1, -1]]),
        "cu_seqlens": int32([[0, 3, 5]]),
        "max_seqlen": 3,
    }
    assert_batch_equal(out, expected, clause="tb-shapes", call=call)
    masked = ctb(backend, [F15_ROW], META, msk=True)
    assert_tensor_equal(
        "labels",
        masked["labels"],
        long([[12, 13, -100, 22, -100, -100, -100, -100]]),
        clause="ctb-segment-starts",
        call=call + ", msk",
    )


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("thd-lengths", "tb-shapes")
def test_f15_thd_padded_lengths_sum_to_the_width(backend):
    """F15 THD: seq_lens [[3,2]], seq_lens_padded [[3,5]] (sum 8)."""
    out = ctb(backend, [F15_ROW], META, fmt="thd")
    expected = {"seq_lens": long([[3, 2]]), "seq_lens_padded": long([[3, 5]]), "qkv_format": "thd"}
    assert_batch_equal(out, expected, clause="thd-lengths", call=show("F15", [F15_ROW], output_format="thd"))


F15_UNPACKED = [R0([11, 12, 13]), R0([21, 22])]
F15_UNPACKED_CALL = show("F15", F15_UNPACKED, contract=META, pad_to_length=9, pad_token_id=0)


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-padding", "unpacked-same-route", "tb-shapes", "batched-metadata")
def test_f15_pad_to_length_pads_every_per_token_field(backend):
    """F15 pad_to_length=9: every field of both rows is padded to width 8, positions included."""
    out = ctb(backend, F15_UNPACKED, META, pad_to_length=9, pad_token_id=0)
    expected = {
        "input_ids": long([[11, 12, 13, 0, 0, 0, 0, 0], [21, 22, 0, 0, 0, 0, 0, 0]]),
        "labels": long([[12, 13, -100, -100, -100, -100, -100, -100], [22, -100, -100, -100, -100, -100, -100, -100]]),
        "position_ids": long([[0, 1, 2, 0, 1, 2, 3, 4], [0, 1, 0, 1, 2, 3, 4, 5]]),
        "padding_mask": bools([[F, F, F, T, T, T, T, T], [F, F, T, T, T, T, T, T]]),
        **ids3([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]]),
        "packed_token_indices": long([[0, 1, 2, -1, -1, -1, -1, -1], [0, 1, -1, -1, -1, -1, -1, -1]]),
        "cu_seqlens": int32([[0, 3], [0, 2]]),
        "max_seqlen": 3,
    }
    assert_batch_equal(out, expected, clause="unpacked-padding", call=F15_UNPACKED_CALL)


@pytest.mark.requires("convert_text_batch", "unpacked", "thd")
@pytest.mark.clause("unpacked-same-route", "thd-lengths")
def test_f15_pad_to_length_thd_lengths(backend):
    """F15 pad_to_length=9 THD: seq_lens [[3],[2]], seq_lens_padded [[8],[8]]."""
    out = ctb(backend, F15_UNPACKED, META, fmt="thd", pad_to_length=9, pad_token_id=0)
    expected = {"seq_lens": long([[3], [2]]), "seq_lens_padded": long([[8], [8]]), "qkv_format": "thd"}
    assert_batch_equal(out, expected, clause="thd-lengths", call=F15_UNPACKED_CALL + ", thd")
