"""Golden cases from other systems' packing failures (field reports F01-F15,
docs/sources.md#field-reports), restated as inputs to our contract. Every expected value is a
literal from the field report (produced there by Zephon 0.2.0 or upstream nemo-automodel 0.7.0
code and checked by hand), or, for the reports' metamorphic lines, written here by hand from
the same rules; none is computed. The ``collate_datums`` parts of the reports live in datum.py,
the ``build_packed_sequence_metadata`` parts (F11-F13) in metadata.py. Every case carries its
report as ``source`` (``"F07"``; ``ctb`` reads it from the case name), which its record.json
stores.
"""

from __future__ import annotations

import re

from batchspec.conformance.golden.api import (
    BATCHED_KEYS,
    DOCUMENT_IDS_METADATA_CONTRACT,
    METADATA_CONTRACT,
    METADATA_KEYS,
    THD_KEYS,
    Case,
    Row,
    block_mask,
    bools,
    int32,
    long,
    text_batch_inputs,
)

F, T = False, True


def packed(tokens, positions, padding_length) -> Row:
    """One packed row as pack_flat emits it: tokens, positions, ``meta.padding_length``."""
    return Row(tuple(tokens), tuple(positions), padding_length)


def unpacked(tokens) -> Row:
    """One record with tokens only: no positions, no padding metadata."""
    return Row(tuple(tokens), None, None)


def batched_ids(values) -> dict:
    """Expected id fields of batched output without xdoc: the document ids, the selected ids and
    ``_packed_seq_ids``, all equal."""
    return {"document_ids": long(values), "attention_document_ids": long(values), "_packed_seq_ids": long(values)}


def thd_ids(values) -> dict:
    """Expected id fields of THD output without xdoc: the document ids and the selected ids."""
    return {"document_ids": long(values), "attention_document_ids": long(values)}


def report(name: str) -> str:
    """The field report a case restates, from its name: ``f07_...`` -> ``"F07"``."""
    match = re.fullmatch(r"f(\d\d)_\w+", name)
    if match is None:
        raise ValueError(f"a field-report case name starts with its report, e.g. 'f07_...', got {name!r}")
    return f"F{match.group(1)}"


def convert_case(name, clauses, description, inputs, expected=None, error=None, keys=None, **options):
    return Case(
        name=f"test_{name}",
        clauses=tuple(clauses),
        description=description,
        function="convert_text_batch",
        inputs=inputs,
        options=options,
        expected=expected,
        error=error,
        keys=keys,
        source=report(name),
    )


F01 = packed([11, 12, 13, 21, 22, 31, 0], [0, 1, 2, 0, 1, 0, 0], 1)


def case_f01():
    return [
        convert_case(
            "f01_packed_row_keeps_its_boundaries",
            [
                "ctb-shift",
                "ctb-positions",
                "ctb-padding-mask",
                "ctb-padding-labels",
                "ctb-document-ids",
                "ctb-attention-ids",
                "batched-packed-seq-ids",
                "ctb-boundaries-from-zeros",
                "batched-metadata",
                "tb-dtypes",
                "tb-keys",
            ],
            "F01: a packed row with positions gives three subdocuments, in ids and metadata",
            text_batch_inputs(F01),
            {
                "input_ids": long([[11, 12, 13, 21, 22, 31]]),
                "labels": long([[12, 13, 21, 22, 31, -100]]),
                "position_ids": long([[0, 1, 2, 0, 1, 0]]),
                "padding_mask": bools([[F] * 6]),
                **batched_ids([[1, 1, 1, 2, 2, 3]]),
                "packed_token_indices": long([[0, 1, 2, 3, 4, 5]]),
                "cu_seqlens": int32([[0, 3, 5, 6]]),
                "max_seqlen": 3,
            },
            keys=(*BATCHED_KEYS, *METADATA_KEYS),
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f01_packed_row_mask_segment_starts",
            ["ctb-segment-starts"],
            "F01 with mask_segment_starts",
            text_batch_inputs(F01),
            {"labels": long([[12, 13, -100, 22, -100, -100]])},
            contract=METADATA_CONTRACT,
            mask_segment_starts=True,
        ),
        convert_case(
            "f01_thd_lengths_follow_the_boundaries",
            ["thd-lengths", "thd-qkv-format", "ctb-output-route", "tb-keys"],
            "F01 THD: seq_lens [[3,2,1]]; the contract's mask and metadata requests are ignored",
            text_batch_inputs(F01),
            {
                "input_ids": long([[11, 12, 13, 21, 22, 31]]),
                "position_ids": long([[0, 1, 2, 0, 1, 0]]),
                **thd_ids([[1, 1, 1, 2, 2, 3]]),
                "seq_lens": long([[3, 2, 1]]),
                "seq_lens_padded": long([[3, 2, 1]]),
                "qkv_format": "thd",
            },
            keys=THD_KEYS,
            contract=METADATA_CONTRACT,
            output_format="thd",
        ),
        convert_case(
            "f01_record_without_positions_or_count_is_one_document",
            ["ctb-positions", "ctb-document-ids", "batched-metadata"],
            "F01: no positions and a tag without num_sequences falls back to one document",
            text_batch_inputs({"row": Row(F01.tokens, None, 1), "tags": {"padding_length": 1}}),
            {
                "input_ids": long([[11, 12, 13, 21, 22, 31]]),
                "position_ids": long([[0, 1, 2, 3, 4, 5]]),
                **batched_ids([[1] * 6]),
                "cu_seqlens": int32([[0, 6]]),
                "max_seqlen": 6,
            },
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f01_packed_record_without_positions_is_rejected",
            ["ctb-packed-needs-positions"],
            "F01 (D-4): num_sequences > 1 without positions raises ValueError naming the record",
            text_batch_inputs(F01, {"row": F01, "drop_positions": True}),
            error=("ValueError", (1,)),
            contract=METADATA_CONTRACT,
        ),
    ]


F02 = packed([5, 6, 7, 8, 9, 0], [0, 1, 2, 0, 1, 0], 1)


def case_f02():
    cases = [
        convert_case(
            "f02_positions_are_zero_based",
            ["ctb-positions", "ctb-boundaries-from-zeros", "batched-metadata"],
            "F02 (D-5): position_ids are 0-based subdocument coordinates",
            text_batch_inputs(F02),
            {
                "position_ids": long([[0, 1, 2, 0, 1]]),
                "labels": long([[6, 7, 8, 9, -100]]),
                **batched_ids([[1, 1, 1, 2, 2]]),
                "cu_seqlens": int32([[0, 3, 5]]),
                "max_seqlen": 3,
            },
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f02_mask_segment_starts",
            ["ctb-segment-starts"],
            "F02 with mask_segment_starts",
            text_batch_inputs(F02),
            {"labels": long([[6, 7, -100, 9, -100]])},
            contract=METADATA_CONTRACT,
            mask_segment_starts=True,
        ),
    ]
    shifted = [
        ("origin_2", [packed([5, 6, 7, 8, 9, 0], [2, 3, 4, 2, 3, 2], 1)], 0),
        ("origin_1", [packed([5, 6, 7, 8, 9, 0], [1, 2, 3, 1, 2, 1], 1)], 0),
        ("origin_1_second_record", [F02, packed([5, 6, 7, 8, 9, 0], [1, 2, 3, 1, 2, 1], 1)], 1),
    ]
    cases += [
        convert_case(
            f"f02_rejects_{n}",
            ["ctb-input-errors", "ctb-positions"],
            "F02: positions with a RoBERTa-style origin are rejected",
            text_batch_inputs(*r),
            error=("ValueError", (rec, "positions")),
            contract=METADATA_CONTRACT,
        )
        for n, r, rec in shifted
    ]
    return cases


def case_f03():
    no_zero = [
        ("no_zero_at_all", [packed([1, 2, 3, 4, 5], [3, 4, 5, 6, 7], 0)], 0),
        ("zero_later", [packed([1, 2, 3, 4, 5, 0], [3, 4, 0, 1, 2, 0], 1)], 0),
        (
            "zero_later_second_record",
            [packed([1, 2, 3, 4, 5, 0], [0, 1, 2, 0, 1, 0], 1), packed([1, 2, 3, 4, 5, 0], [3, 4, 0, 1, 2, 0], 1)],
            1,
        ),
    ]
    cases = [
        convert_case(
            f"f03_rejects_{n}",
            ["ctb-input-errors"],
            "F03 (D-3): a row not starting at position 0 is rejected",
            text_batch_inputs(*r),
            error=("ValueError", (rec, "positions")),
            contract=METADATA_CONTRACT,
        )
        for n, r, rec in no_zero
    ]
    cases += [
        convert_case(
            "f03_wrap_continuation_is_a_new_subdocument",
            ["ctb-boundaries-from-zeros", "ctb-document-ids", "batched-metadata"],
            "F03: a wrap continuation restarted at 0 opens subdocument 2",
            text_batch_inputs(packed([17, 18, 19, 20, 30, 31, 32], [0, 1, 2, 3, 0, 1, 2], 0)),
            {
                "labels": long([[18, 19, 20, 30, 31, 32]]),
                **batched_ids([[1, 1, 1, 1, 2, 2]]),
                "cu_seqlens": int32([[0, 4, 6]]),
                "max_seqlen": 4,
            },
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f03_position_jump_is_not_a_boundary",
            ["ctb-boundaries-from-zeros", "ctb-positions", "ctb-document-ids", "batched-metadata"],
            "F03: positions [0,1,2,5,6,...] are one subdocument",
            text_batch_inputs(packed([10, 11, 12, 13, 14, 15, 16], [0, 1, 2, 5, 6, 7, 8], 0)),
            {
                "position_ids": long([[0, 1, 2, 5, 6, 7]]),
                **batched_ids([[1] * 6]),
                "cu_seqlens": int32([[0, 6]]),
                "max_seqlen": 6,
            },
            contract=METADATA_CONTRACT,
        ),
    ]
    return cases


F04 = packed([1, 10, 11, 2, 1, 20, 21, 2, 1], [0, 1, 2, 3, 0, 1, 2, 3, 0], 0)


def case_f04():
    return [
        convert_case(
            "f04_cross_document_targets_kept_by_default",
            ["ctb-cross-document-targets", "ctb-shift", "ctb-document-ids", "batched-metadata"],
            "F04: msk off trains EOS->BOS across documents",
            text_batch_inputs(F04),
            {
                "input_ids": long([[1, 10, 11, 2, 1, 20, 21, 2]]),
                "labels": long([[10, 11, 2, 1, 20, 21, 2, 1]]),
                "position_ids": long([[0, 1, 2, 3, 0, 1, 2, 3]]),
                **batched_ids([[1, 1, 1, 1, 2, 2, 2, 2]]),
                "cu_seqlens": int32([[0, 4, 8]]),
                "max_seqlen": 4,
            },
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f04_mask_segment_starts",
            ["ctb-segment-starts"],
            "F04: msk masks exactly the cross-document targets",
            text_batch_inputs(F04),
            {"labels": long([[10, 11, 2, -100, 20, 21, 2, -100]])},
            contract=METADATA_CONTRACT,
            mask_segment_starts=True,
        ),
        convert_case(
            "f04_thd_lengths",
            ["thd-lengths"],
            "F04 THD: two full documents",
            text_batch_inputs(F04),
            {"seq_lens": long([[4, 4]]), "seq_lens_padded": long([[4, 4]]), "qkv_format": "thd"},
            contract=METADATA_CONTRACT,
            output_format="thd",
        ),
        convert_case(
            "f04_msk_under_xdoc_uses_original_boundaries",
            ["ctb-xdoc", "ctb-segment-starts", "ctb-selected-ids", "xdoc-positions", "xdoc-attention-ids"],
            "F04: msk + xdoc masks the original boundaries while positions and metadata span the row",
            text_batch_inputs(F04),
            {
                "labels": long([[10, 11, 2, -100, 20, 21, 2, -100]]),
                "position_ids": long([list(range(8))]),
                "document_ids": long([[1, 1, 1, 1, 2, 2, 2, 2]]),
                "attention_document_ids": long([[1] * 8]),
                "_packed_seq_ids": long([[1] * 8]),
                "cu_seqlens": int32([[0, 8]]),
                "max_seqlen": 8,
            },
            contract=METADATA_CONTRACT,
            mask_segment_starts=True,
            xdoc=True,
        ),
        convert_case(
            "f04_without_special_tokens",
            ["ctb-cross-document-targets"],
            "F04 without BOS/EOS: doc 1's last token predicts doc 2's first",
            text_batch_inputs(packed([10, 11, 20, 21, 0], [0, 1, 0, 1, 0], 1)),
            {"labels": long([[11, 20, 21, -100]])},
        ),
        convert_case(
            "f04_without_special_tokens_masked",
            ["ctb-segment-starts"],
            "F04 without BOS/EOS, msk on",
            text_batch_inputs(packed([10, 11, 20, 21, 0], [0, 1, 0, 1, 0], 1)),
            {"labels": long([[11, -100, 21, -100]])},
            mask_segment_starts=True,
        ),
        convert_case(
            "f05_target_never_crosses_into_next_rollout",
            ["ctb-segment-starts", "ctb-padding-labels"],
            "F05 packed-row equivalent: with msk, rollout 1's last label is ignored",
            text_batch_inputs(packed([50, 51, 52, 60, 61, 0], [0, 1, 2, 0, 1, 0], 1)),
            {"labels": long([[51, 52, -100, 61, -100]])},
            mask_segment_starts=True,
        ),
    ]


F06_ROWS = text_batch_inputs(unpacked([5, 6, 0]), unpacked([5, 0, 6, 0]))
F06 = {
    "input_ids": long([[5, 6, 0, 0, 0, 0], [5, 0, 6, 0, 0, 0]]),
    "labels": long([[6, 0, -100, -100, -100, -100], [0, 6, 0, -100, -100, -100]]),
    "padding_mask": bools([[F, F, F, T, T, T], [F, F, F, F, T, T]]),
    "position_ids": long([[0, 1, 2, 0, 1, 2], [0, 1, 2, 3, 0, 1]]),
    **batched_ids([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0]]),
    "attention_mask": block_mask(
        "1..... 11.... 111... ...... ...... ......", "1..... 11.... 111... 1111.. ...... ......"
    ),
}


def case_f06():
    return [
        convert_case(
            "f06_pad_equals_eos_real_eos_keeps_its_label",
            [
                "unpacked-padding",
                "unpacked-same-route",
                "ctb-padding-labels",
                "ctb-padding-mask",
                "batched-block-causal",
            ],
            "F06: with pad == eos == 0, real EOS tokens keep their labels",
            F06_ROWS,
            F06,
            keys=BATCHED_KEYS,
            pad_to_length=7,
            pad_token_id=0,
        ),
        convert_case(
            "f06_pad_token_id_only_changes_pad_slots",
            ["unpacked-padding", "ctb-padding-labels", "ctb-padding-mask"],
            "F06: pad_token_id=99 changes only the pad slots of input_ids",
            F06_ROWS,
            {**F06, "input_ids": long([[5, 6, 0, 99, 99, 99], [5, 0, 6, 0, 99, 99]])},
            pad_to_length=7,
            pad_token_id=99,
        ),
        convert_case(
            "f06_pre_padded_rows_give_the_same_output",
            [
                "ctb-padding-labels",
                "unpacked-padding",
                "ctb-padding-mask",
                "ctb-document-ids",
                "batched-block-causal",
            ],
            "F06 pre-padded form gives the same output without pad_to_length",
            text_batch_inputs(
                packed([5, 6, 0, 0, 0, 0, 0], [0, 1, 2, 0, 1, 2, 3], 4),
                packed([5, 0, 6, 0, 0, 0, 0], [0, 1, 2, 3, 0, 1, 2], 3),
            ),
            F06,
            keys=BATCHED_KEYS,
        ),
    ]


F07_COMPLETION = block_mask("1... 11.. 111. ....")
F07_PROMPT = block_mask("1..... 11.... 111... 1111.. 11111. ......")


def case_f07():
    cases = [
        convert_case(
            "f07_prompt_thd_padding_joins_the_last_subdocument",
            ["thd-lengths"],
            "F07 prompt THD",
            text_batch_inputs(packed([7, 30, 2, 7, 40, 2, 2], [0, 1, 2, 3, 4, 0, 1], 2)),
            {"seq_lens": long([[5]]), "seq_lens_padded": long([[6]]), "qkv_format": "thd"},
            output_format="thd",
        ),
    ]
    for p in (0, 2, 7, 30, 40, 70, 71):
        cases.append(
            convert_case(
                f"f07_completion_pad_id_{p}",
                ["ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids", "batched-block-causal"],
                f"F07 completion with pad id {p}: only the pad slots change",
                text_batch_inputs(packed([70, 71, 2, p, p], [0, 1, 2, 0, 1], 2)),
                {
                    "input_ids": long([[70, 71, 2, p]]),
                    "labels": long([[71, 2, -100, -100]]),
                    "padding_mask": bools([[F, F, F, T]]),
                    **batched_ids([[1, 1, 1, 0]]),
                    "position_ids": long([[0, 1, 2, 0]]),
                    "attention_mask": F07_COMPLETION,
                },
            )
        )
        cases.append(
            convert_case(
                f"f07_prompt_pad_id_{p}",
                ["ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids", "batched-block-causal"],
                f"F07 prompt with pad id {p}: a marker equal to the pad id is real",
                text_batch_inputs(packed([7, 30, 2, 7, 40, p, p], [0, 1, 2, 3, 4, 0, 1], 2)),
                {
                    "input_ids": long([[7, 30, 2, 7, 40, p]]),
                    "labels": long([[30, 2, 7, 40, -100, -100]]),
                    "padding_mask": bools([[F, F, F, F, F, T]]),
                    **batched_ids([[1, 1, 1, 1, 1, 0]]),
                    "attention_mask": F07_PROMPT,
                },
            )
        )
    for name, ids, row in (
        ("left_padding", [[0, 0, 1, 1, 1, 1, 1]], 0),
        ("left_padding_second_row", [[1] * 7, [0, 0, 1, 1, 1, 1, 1]], 1),
    ):
        cases.append(
            Case(
                name=f"test_f07_thd_rejects_{name}",
                clauses=("thd-errors",),
                description="F07: left padding is out of contract for THD output",
                function="convert_batch_output",
                inputs={"batch": {"document_ids": long(ids), "attention_document_ids": long(ids)}},
                options={"output_format": "thd"},
                error=("ValueError", (row,)),
                source="F07",
            )
        )
    return cases


F08 = text_batch_inputs(packed([10, 11, 2, 2, 2], [0, 1, 2, 0, 1], 2), packed([20, 21, 22, 2, 30], [0, 1, 2, 3, 0], 0))


def case_f08():
    return [
        convert_case(
            "f08_gathering_keeps_eos_equal_to_pad",
            ["ctb-padding-labels", "ctb-padding-mask", "batched-document-ids-mask", "batched-metadata", "meta-indices"],
            "F08: packed_token_indices >= 0 gathers the real tokens; row 0's real EOS survives",
            F08,
            {
                "input_ids": long([[10, 11, 2, 2], [20, 21, 22, 2]]),
                "labels": long([[11, 2, -100, -100], [21, 22, 2, 30]]),
                "padding_mask": bools([[F, F, F, T], [F, F, F, F]]),
                "position_ids": long([[0, 1, 2, 0], [0, 1, 2, 3]]),
                **batched_ids([[1, 1, 1, 0], [1, 1, 1, 1]]),
                "attention_mask": long([[1, 1, 1, 0], [1, 1, 1, 1]]),
                "packed_token_indices": long([[0, 1, 2, -1], [0, 1, 2, 3]]),
                "cu_seqlens": int32([[0, 3], [0, 4]]),
                "max_seqlen": 4,
            },
            keys=(*BATCHED_KEYS, *METADATA_KEYS),
            contract=DOCUMENT_IDS_METADATA_CONTRACT,
        ),
        convert_case(
            "f08_thd_lengths",
            ["thd-lengths", "ctb-output-route"],
            "F08 THD: no batched keys",
            F08,
            {"seq_lens": long([[3], [4]]), "seq_lens_padded": long([[4], [4]]), "qkv_format": "thd"},
            keys=THD_KEYS,
            contract=DOCUMENT_IDS_METADATA_CONTRACT,
            output_format="thd",
        ),
    ]


F09 = packed([1, 2, 3, 4, 5, 0], [0, 1, 2, 0, 1, 0], 1)


def case_f09():
    cases = []
    for name, extra in (
        ("no_extra_field", None),
        ("zephon_attention_mask", [1, 1, 1, 1, 1, 0]),
        ("all_ones_attention_mask", [1, 1, 1, 1, 1, 1]),
    ):
        row = {"row": F09} if extra is None else {"row": F09, "extra": {"attention_mask": long(extra)}}
        cases += [
            convert_case(
                f"f09_{name}_block_causal",
                ["ctb-extra-payload-ignored", "batched-block-causal", "tb-keys"],
                "F09: a payload attention_mask does not switch packed masking off",
                text_batch_inputs(row),
                {
                    "input_ids": long([[1, 2, 3, 4, 5]]),
                    "labels": long([[2, 3, 4, 5, -100]]),
                    "position_ids": long([[0, 1, 2, 0, 1]]),
                    **batched_ids([[1, 1, 1, 2, 2]]),
                    "attention_mask": block_mask("1.... 11... 111.. ...1. ...11"),
                },
                keys=BATCHED_KEYS,
            ),
            convert_case(
                f"f09_{name}_document_ids",
                ["ctb-extra-payload-ignored", "batched-document-ids-mask", "batched-metadata"],
                "F09: a document_ids contract ignores the payload's attention_mask",
                text_batch_inputs(row),
                {"attention_mask": long([[1, 1, 1, 2, 2]]), "cu_seqlens": int32([[0, 3, 5]]), "max_seqlen": 3},
                contract=DOCUMENT_IDS_METADATA_CONTRACT,
            ),
            convert_case(
                f"f09_{name}_xdoc",
                ["ctb-extra-payload-ignored", "ctb-xdoc", "ctb-selected-ids", "batched-block-causal"],
                "F09 xdoc: the whole row attends causally, on purpose",
                text_batch_inputs(row),
                {
                    "position_ids": long([[0, 1, 2, 3, 4]]),
                    "document_ids": long([[1, 1, 1, 2, 2]]),
                    "attention_document_ids": long([[1] * 5]),
                    "attention_mask": block_mask("1.... 11... 111.. 1111. 11111"),
                },
                xdoc=True,
            ),
        ]
    return cases


F10 = packed([1, 2, 3, 0, 0, 0, 0], [0, 1, 2, 0, 1, 2, 3], 4)


def case_f10():
    return [
        convert_case(
            "f10_padding_is_not_a_fake_segment",
            ["ctb-padding-mask", "ctb-document-ids", "ctb-positions", "batched-block-causal", "batched-metadata"],
            "F10: padding has id 0 and attends to nothing",
            text_batch_inputs(F10),
            {
                "input_ids": long([[1, 2, 3, 0, 0, 0]]),
                "labels": long([[2, 3, -100, -100, -100, -100]]),
                "position_ids": long([[0, 1, 2, 0, 1, 2]]),
                "padding_mask": bools([[F, F, F, T, T, T]]),
                **batched_ids([[1, 1, 1, 0, 0, 0]]),
                "attention_mask": block_mask("1..... 11.... 111... ...... ...... ......"),
                "packed_token_indices": long([[0, 1, 2, -1, -1, -1]]),
                "cu_seqlens": int32([[0, 3]]),
                "max_seqlen": 3,
            },
            keys=(*BATCHED_KEYS, *METADATA_KEYS),
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f10_longer_padding_leaves_real_tokens_unchanged",
            ["ctb-padding-mask", "ctb-document-ids", "batched-block-causal", "batched-metadata"],
            "F10 metamorphic: six pad tokens instead of four keep the real prefix and cu_seqlens [[0,3]]",
            text_batch_inputs(packed([1, 2, 3, 0, 0, 0, 0, 0, 0], [0, 1, 2, 0, 1, 2, 3, 4, 5], 6)),
            {
                "input_ids": long([[1, 2, 3, 0, 0, 0, 0, 0]]),
                "labels": long([[2, 3] + [-100] * 6]),
                "position_ids": long([[0, 1, 2, 0, 1, 2, 3, 4]]),
                "padding_mask": bools([[F, F, F, T, T, T, T, T]]),
                **batched_ids([[1, 1, 1, 0, 0, 0, 0, 0]]),
                "attention_mask": block_mask("1....... 11...... 111..... ........ ........ ........ ........ ........"),
                "packed_token_indices": long([[0, 1, 2, -1, -1, -1, -1, -1]]),
                "cu_seqlens": int32([[0, 3]]),
                "max_seqlen": 3,
            },
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f10_thd_padding_joins_the_last_subdocument",
            ["thd-lengths"],
            "F10 THD: seq_lens_padded [[6]]",
            text_batch_inputs(F10),
            {"seq_lens": long([[3]]), "seq_lens_padded": long([[6]]), "qkv_format": "thd"},
            contract=METADATA_CONTRACT,
            output_format="thd",
        ),
    ]


F11_ALL_PADDING = text_batch_inputs(
    packed([1, 2, 3, 4, 5], [0, 1, 2, 3, 4], 0), packed([0, 0, 0, 0, 0], [0, 1, 2, 3, 4], 5)
)
F11_TINY = text_batch_inputs(packed([1, 2, 3, 0], [0, 0, 0, 0], 1))


def case_f11():
    return [
        convert_case(
            "f11_all_padding_row_rejected_batched",
            ["ctb-input-errors"],
            "F11 (A11): a row with no real token",
            F11_ALL_PADDING,
            error=("ValueError", (1, "padding_length")),
        ),
        convert_case(
            "f11_all_padding_row_rejected_thd",
            ["ctb-input-errors"],
            "F11 (A11) THD",
            F11_ALL_PADDING,
            error=("ValueError", (1, "padding_length")),
            output_format="thd",
        ),
        convert_case(
            "f11_zero_supervised_labels_is_legal",
            ["ctb-segment-starts", "ctb-document-ids", "batched-metadata"],
            "F11: three one-token documents with msk have no supervised label",
            F11_TINY,
            {
                "labels": long([[-100, -100, -100]]),
                "position_ids": long([[0, 0, 0]]),
                **batched_ids([[1, 2, 3]]),
                "cu_seqlens": int32([[0, 1, 2, 3]]),
                "max_seqlen": 1,
            },
            contract=METADATA_CONTRACT,
            mask_segment_starts=True,
        ),
        convert_case(
            "f11_one_token_documents_keep_cross_targets",
            ["ctb-cross-document-targets"],
            "F11 without msk",
            F11_TINY,
            {"labels": long([[2, 3, -100]])},
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f11_zero_supervised_labels_thd",
            ["thd-lengths", "ctb-document-ids"],
            "F11 THD + msk",
            F11_TINY,
            {"labels": long([[-100, -100, -100]]), "document_ids": long([[1, 2, 3]]), "seq_lens": long([[1, 1, 1]])},
            contract=METADATA_CONTRACT,
            mask_segment_starts=True,
            output_format="thd",
        ),
    ]


F12 = packed([1, 2, 3, 4, 5, 6, 0], [0, 1, 0, 1, 2, 0, 0], 1)


def case_f12():
    return [
        convert_case(
            "f12_empty_documents_leave_no_zero_length_segment",
            ["ctb-boundaries-from-zeros", "ctb-document-ids", "batched-metadata"],
            "F12: documents [1,2],[],[3,4,5],[],[6] give cu_seqlens [[0,2,5,6]]",
            text_batch_inputs(F12),
            {
                "labels": long([[2, 3, 4, 5, 6, -100]]),
                "position_ids": long([[0, 1, 0, 1, 2, 0]]),
                **batched_ids([[1, 1, 2, 2, 2, 3]]),
                "cu_seqlens": int32([[0, 2, 5, 6]]),
                "max_seqlen": 3,
            },
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f12_mask_segment_starts",
            ["ctb-segment-starts"],
            "F12 with msk",
            text_batch_inputs(F12),
            {"labels": long([[2, -100, 4, 5, -100, -100]])},
            contract=METADATA_CONTRACT,
            mask_segment_starts=True,
        ),
        convert_case(
            "f12_thd_lengths_are_positive",
            ["thd-lengths"],
            "F12 THD: no zero-length entry",
            text_batch_inputs(F12),
            {"seq_lens": long([[2, 3, 1]]), "seq_lens_padded": long([[2, 3, 1]]), "qkv_format": "thd"},
            contract=METADATA_CONTRACT,
            output_format="thd",
        ),
    ]


F13 = {"row": packed([11, 12, 13, 21, 22, 0], [0, 1, 2, 0, 1, 0], 1), "payload_dtype": "int32"}


def case_f13():
    return [
        convert_case(
            "f13_int32_payload_gives_contract_dtypes",
            ["tb-dtypes", "tb-shapes", "batched-metadata", "tb-keys"],
            "F13: int32 payloads give int64 fields, bool masks, int32 cu_seqlens, int max_seqlen",
            text_batch_inputs(F13),
            {
                "input_ids": long([[11, 12, 13, 21, 22]]),
                "labels": long([[12, 13, 21, 22, -100]]),
                "position_ids": long([[0, 1, 2, 0, 1]]),
                "padding_mask": bools([[F] * 5]),
                **batched_ids([[1, 1, 1, 2, 2]]),
                "attention_mask": block_mask("1.... 11... 111.. ...1. ...11"),
                "packed_token_indices": long([[0, 1, 2, 3, 4]]),
                "cu_seqlens": int32([[0, 3, 5]]),
                "max_seqlen": 3,
            },
            keys=(*BATCHED_KEYS, *METADATA_KEYS),
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f13_int32_payload_metadata_dtypes",
            ["meta-cu-seqlens", "meta-max-seqlen", "batched-metadata"],
            "F13: from int32 payloads, the metadata bundle still has int32 cu_seqlens and an int max_seqlen",
            text_batch_inputs(F13),
            {
                "packed_token_indices": long([[0, 1, 2, 3, 4]]),
                "cu_seqlens": int32([[0, 3, 5]]),
                "max_seqlen": 3,
            },
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f13_int32_payload_thd_lengths_are_int64",
            ["tb-dtypes", "thd-lengths", "thd-qkv-format"],
            "F13 THD: int64 seq_lens and a str qkv_format",
            text_batch_inputs(F13),
            {
                "input_ids": long([[11, 12, 13, 21, 22]]),
                "position_ids": long([[0, 1, 2, 0, 1]]),
                **thd_ids([[1, 1, 1, 2, 2]]),
                "seq_lens": long([[3, 2]]),
                "seq_lens_padded": long([[3, 2]]),
                "qkv_format": "thd",
            },
            keys=THD_KEYS,
            contract=METADATA_CONTRACT,
            output_format="thd",
        ),
    ]


F14_ROW = packed([1, 2, 3, 4, 5, 0, 0], [0, 1, 0, 1, 2, 0, 1], 2)
F14_MAPPING = {
    "position_ids": long([[[0, 1, 0, 1, 2, 0]]] * 3),
    "document_ids": long([[1, 1, 2, 2, 2, 0]]),
    "padding_mask": bools([[F, F, F, F, F, T]]),
}


F14_XDOC = {  # enable_xdoc_attention's new entries for F14's segments
    "position_ids": long([[[0, 1, 2, 3, 4, 0]]] * 3),
    "attention_document_ids": long([[1, 1, 1, 1, 1, 0]]),
}
F14_CONVERTED = {  # F14's row converted, then through adapt_model_inputs: three RoPE axes
    "input_ids": long([[5, 6, 7, 8, 9, 0]]),
    "labels": long([[6, -100, 8, 9, -100, -100]]),
    "padding_mask": bools([[F, F, F, F, F, T]]),
    "document_ids": long([[1, 1, 2, 2, 2, 0]]),
}


def case_f14():
    return [
        convert_case(
            "f14_second_segment_id_is_real",
            ["batched-block-causal", "ctb-document-ids", "ctb-positions"],
            "F14: id 2 is a real segment; each segment keeps its own coordinates",
            text_batch_inputs(F14_ROW),
            {
                "position_ids": long([[0, 1, 0, 1, 2, 0]]),
                "padding_mask": bools([[F, F, F, F, F, T]]),
                **batched_ids([[1, 1, 2, 2, 2, 0]]),
                "attention_mask": block_mask("1..... 11.... ..1... ..11.. ..111. ......"),
            },
        ),
        Case(
            name="test_f14_adapt_keeps_segment_ids_and_mrope",
            source="F14",
            clauses=("adapt-attention-ids", "adapt-no-mutation"),
            description="F14: adapt_model_inputs keeps id 2 and leaves mRoPE positions unchanged",
            function="adapt_model_inputs",
            inputs={"batch": F14_MAPPING},
            expected={**F14_MAPPING, "attention_document_ids": long([[1, 1, 2, 2, 2, 0]])},
        ),
        Case(
            name="test_f14_xdoc_numbers_mrope_continuously",
            source="F14",
            clauses=("xdoc-positions", "xdoc-attention-ids", "xdoc-untouched"),
            description="F14 (A16): enable_xdoc_attention turns every mRoPE axis into [0,1,2,3,4,0]",
            function="enable_xdoc_attention",
            inputs={"batch": {**F14_MAPPING, "attention_document_ids": long([[1, 1, 2, 2, 2, 0]])}},
            expected={
                **F14_XDOC,
                "document_ids": long([[1, 1, 2, 2, 2, 0]]),
                "padding_mask": bools([[F, F, F, F, F, T]]),
            },
        ),
        Case(
            name="test_f14_xdoc_leaves_the_other_fields_untouched",
            source="F14",
            clauses=("xdoc-positions", "xdoc-attention-ids", "xdoc-untouched"),
            description="F14: on a whole converted mapping, [3, 1, 6] positions become [0,1,2,3,4,0] on every "
            "axis; input_ids, labels, padding_mask and document_ids are untouched",
            function="enable_xdoc_attention",
            inputs={
                "batch": {
                    **F14_CONVERTED,
                    "position_ids": F14_MAPPING["position_ids"],
                    "attention_document_ids": F14_CONVERTED["document_ids"],
                }
            },
            expected={**F14_CONVERTED, **F14_XDOC},
        ),
    ]


F15 = packed([11, 12, 13, 21, 22, 0, 0, 0, 0], [0, 1, 2, 0, 1, 0, 1, 2, 3], 4)
F15_UNPACKED = text_batch_inputs(unpacked([11, 12, 13]), unpacked([21, 22]))


def case_f15():
    return [
        convert_case(
            "f15_every_per_token_field_has_the_packed_width",
            ["tb-shapes", "ctb-positions", "ctb-padding-mask", "batched-metadata"],
            "F15: a packed row of 8 inputs gives [1,8] fields and a [1,1,8,8] mask",
            text_batch_inputs(F15),
            {
                "input_ids": long([[11, 12, 13, 21, 22, 0, 0, 0]]),
                "labels": long([[12, 13, 21, 22, -100, -100, -100, -100]]),
                "position_ids": long([[0, 1, 2, 0, 1, 0, 1, 2]]),
                "padding_mask": bools([[F, F, F, F, F, T, T, T]]),
                **batched_ids([[1, 1, 1, 2, 2, 0, 0, 0]]),
                "attention_mask": block_mask("1....... 11...... 111..... ...1.... ...11... ........ ........ ........"),
                "packed_token_indices": long([[0, 1, 2, 3, 4, -1, -1, -1]]),
                "cu_seqlens": int32([[0, 3, 5]]),
                "max_seqlen": 3,
            },
            keys=(*BATCHED_KEYS, *METADATA_KEYS),
            contract=METADATA_CONTRACT,
        ),
        convert_case(
            "f15_mask_segment_starts",
            ["ctb-segment-starts"],
            "F15 with msk",
            text_batch_inputs(F15),
            {"labels": long([[12, 13, -100, 22, -100, -100, -100, -100]])},
            contract=METADATA_CONTRACT,
            mask_segment_starts=True,
        ),
        convert_case(
            "f15_thd_padded_lengths_sum_to_the_width",
            ["thd-lengths", "tb-shapes"],
            "F15 THD",
            text_batch_inputs(F15),
            {"seq_lens": long([[3, 2]]), "seq_lens_padded": long([[3, 5]]), "qkv_format": "thd"},
            contract=METADATA_CONTRACT,
            output_format="thd",
        ),
        convert_case(
            "f15_pad_to_length_pads_every_field",
            ["unpacked-padding", "unpacked-same-route", "tb-shapes", "batched-metadata"],
            "F15 pad_to_length=9: every field of both rows is padded to width 8",
            F15_UNPACKED,
            {
                "input_ids": long([[11, 12, 13, 0, 0, 0, 0, 0], [21, 22, 0, 0, 0, 0, 0, 0]]),
                "labels": long([[12, 13] + [-100] * 6, [22] + [-100] * 7]),
                "position_ids": long([[0, 1, 2, 0, 1, 2, 3, 4], [0, 1, 0, 1, 2, 3, 4, 5]]),
                "padding_mask": bools([[F, F, F, T, T, T, T, T], [F, F, T, T, T, T, T, T]]),
                **batched_ids([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]]),
                "packed_token_indices": long([[0, 1, 2] + [-1] * 5, [0, 1] + [-1] * 6]),
                "cu_seqlens": int32([[0, 3], [0, 2]]),
                "max_seqlen": 3,
            },
            keys=(*BATCHED_KEYS, *METADATA_KEYS),
            contract=METADATA_CONTRACT,
            pad_to_length=9,
            pad_token_id=0,
        ),
        convert_case(
            "f15_pad_to_length_thd_lengths",
            ["unpacked-same-route", "thd-lengths"],
            "F15 pad_to_length=9 THD",
            F15_UNPACKED,
            {"seq_lens": long([[3], [2]]), "seq_lens_padded": long([[8], [8]]), "qkv_format": "thd"},
            contract=METADATA_CONTRACT,
            output_format="thd",
            pad_to_length=9,
            pad_token_id=0,
        ),
    ]
