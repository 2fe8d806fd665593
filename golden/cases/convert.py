"""Golden cases for SPEC.md's "``TrainingBatch`` fields", "``convert_text_batch``", "The unpacked
route" and "Output formats": ``convert_text_batch`` (worked examples A-G, bad inputs, the
unpacked route, xdoc's bound). Every ``expected`` is a literal written by hand from SPEC.md's
worked examples and clauses; this module is its only home (the conformance modules keep only
what a stored case cannot express).
"""

from __future__ import annotations

import torch

from batchspec.conformance.golden.api import (
    BATCHED_KEYS,
    CONVERT_CLAUSES,
    DOCUMENT_IDS_METADATA_CONTRACT,
    METADATA_KEYS,
    THD_KEYS,
    Case,
    Row,
    Value,
    block_mask,
    bools,
    int32,
    long,
    packed_row,
    text_batch_inputs,
)

F, T = False, True
# The shared packed batch of SPEC.md's worked examples: B = 2, L = 9, S = 8, pad id 0.
ROW_0 = Row(tokens=(11, 12, 13, 21, 22, 31, 32, 0, 0), positions=(0, 1, 2, 0, 1, 0, 1, 0, 1), padding_length=2)
ROW_1 = Row(tokens=(41, 42, 43, 44, 45, 51, 52, 53, 0), positions=(0, 1, 2, 3, 4, 0, 1, 2, 0), padding_length=1)
EXAMPLE_ROWS = text_batch_inputs(ROW_0, ROW_1)
IDS = [[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]]
JOINED = [[1, 1, 1, 1, 1, 1, 1, 0], [1] * 8]
EXAMPLE_A = {
    "input_ids": long([[11, 12, 13, 21, 22, 31, 32, 0], [41, 42, 43, 44, 45, 51, 52, 53]]),
    "labels": long([[12, 13, 21, 22, 31, 32, -100, -100], [42, 43, 44, 45, 51, 52, 53, -100]]),
    "position_ids": long([[0, 1, 2, 0, 1, 0, 1, 0], [0, 1, 2, 3, 4, 0, 1, 2]]),
    "padding_mask": bools([[F, F, F, F, F, F, F, T], [F] * 8]),
    "document_ids": long(IDS),
    "attention_document_ids": long(IDS),
    "_packed_seq_ids": long(IDS),
    "attention_mask": block_mask(
        "1....... 11...... 111..... ...1.... ...11... .....1.. .....11. ........",
        "1....... 11...... 111..... 1111.... 11111... .....1.. .....11. .....111",
    ),
}
B_LABELS = long([[12, 13, -100, 22, -100, 32, -100, -100], [42, 43, 44, 45, -100, 52, 53, -100]])
C_POSITIONS = long([[0, 1, 2, 3, 4, 5, 6, 0], [0, 1, 2, 3, 4, 5, 6, 7]])
CORE = CONVERT_CLAUSES


def case_example_a():
    return Case(
        name="test_example_a_defaults",
        clauses=CORE
        + (
            "ctb-cross-document-targets",
            "batched-packed-seq-ids",
            "batched-block-causal",
            "batched-metadata",
            "ctb-output-route",
            "ctb-boundaries-from-zeros",
            "ctb-no-mutation",
        ),
        description="Example A: two packed rows, defaults, block-causal contract, no metadata",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={},
        expected=EXAMPLE_A,
        keys=BATCHED_KEYS,
    )


def case_example_b():
    return Case(
        name="test_example_b_mask_segment_starts",
        clauses=("ctb-segment-starts",) + CORE,
        description="Example B: labels whose target starts a subdocument become ignore_index",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"mask_segment_starts": True},
        expected={**EXAMPLE_A, "labels": B_LABELS},
        keys=BATCHED_KEYS,
    )


def case_example_c():
    return Case(
        name="test_example_c_xdoc",
        clauses=(
            "ctb-xdoc",
            "ctb-selected-ids",
            "xdoc-positions",
            "xdoc-attention-ids",
            "batched-block-causal",
            "batched-packed-seq-ids",
        ),
        description="Example C: xdoc joins each row's subdocuments and numbers positions continuously",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"xdoc": True},
        expected={
            **EXAMPLE_A,
            "position_ids": C_POSITIONS,
            "attention_document_ids": long(JOINED),
            "_packed_seq_ids": long(JOINED),
            "attention_mask": block_mask(
                "1....... 11...... 111..... 1111.... 11111... 111111.. 1111111. ........",
                "1....... 11...... 111..... 1111.... 11111... 111111.. 1111111. 11111111",
            ),
        },
        keys=BATCHED_KEYS,
    )


EXAMPLE_D = {
    **{k: v for k, v in EXAMPLE_A.items() if k in THD_KEYS},
    "seq_lens": long([[3, 2, 2], [5, 3, -1000]]),
    "seq_lens_padded": long([[3, 2, 3], [5, 3, -1000]]),
    "qkv_format": "thd",
}


def case_example_c_untouched():
    return Case(
        name="test_example_c_leaves_the_other_fields_untouched",
        clauses=("xdoc-untouched",),
        description="Example C: xdoc leaves input_ids, padding_mask and document_ids as in Example A (its labels: "
        "test_example_c_xdoc)",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"xdoc": True},
        expected={k: EXAMPLE_A[k] for k in ("input_ids", "padding_mask", "document_ids")},
    )


def case_example_d():
    return Case(
        name="test_example_d_thd",
        clauses=("thd-lengths", "thd-qkv-format", "ctb-output-route", "tb-keys"),
        description="Example D: THD output of Example A; row 0's pad slot joins its last subdocument",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"output_format": "thd"},
        expected=EXAMPLE_D,
        keys=THD_KEYS,
    )


def case_example_d_ignores_the_contract():
    return Case(
        name="test_example_d_thd_ignores_the_contract",
        clauses=("ctb-output-route", "thd-lengths", "thd-qkv-format", "tb-dtypes", "tb-keys"),
        description="Example D under a document_ids contract that requests metadata: THD output holds no mask "
        "and no metadata",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"output_format": "thd", "contract": DOCUMENT_IDS_METADATA_CONTRACT},
        expected=EXAMPLE_D,
        keys=THD_KEYS,
    )


def case_example_d_prime():
    return Case(
        name="test_example_d_prime_thd_xdoc",
        clauses=("thd-lengths", "ctb-selected-ids", "ctb-xdoc"),
        description="Example D': THD with xdoc: one run per row",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"output_format": "thd", "xdoc": True},
        expected={
            "seq_lens": long([[7], [8]]),
            "seq_lens_padded": long([[8], [8]]),
            "qkv_format": "thd",
            "position_ids": C_POSITIONS,
            "document_ids": long(IDS),
        },
        keys=THD_KEYS,
    )


EXAMPLE_E_ROWS = text_batch_inputs(Row((5, 6, 7), None, None), Row((8, 9, 10, 11, 12), None, None))
E_IDS = [[1, 1, 1, 0, 0], [1] * 5]
EXAMPLE_E = {
    "input_ids": long([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]]),
    "labels": long([[6, 7, -100, -100, -100], [9, 10, 11, 12, -100]]),
    "position_ids": long([[0, 1, 2, 0, 1], [0, 1, 2, 3, 4]]),
    "padding_mask": bools([[F, F, F, T, T], [F] * 5]),
    "document_ids": long(E_IDS),
    "attention_document_ids": long(E_IDS),
    "_packed_seq_ids": long(E_IDS),
    "attention_mask": block_mask("1.... 11... 111.. ..... .....", "1.... 11... 111.. 1111. 11111"),
}


def case_example_e():
    return Case(
        name="test_example_e_unpacked",
        clauses=("unpacked-padding", "unpacked-same-route", "tb-shapes"),
        description="Example E: records without positions padded to pad_to_length=6",
        function="convert_text_batch",
        inputs=EXAMPLE_E_ROWS,
        options={"pad_to_length": 6, "pad_token_id": 0},
        expected=EXAMPLE_E,
        keys=BATCHED_KEYS,
    )


def case_example_e_variants():
    return [
        Case(
            name="test_example_e_honours_the_contract",
            clauses=("unpacked-same-route", "batched-metadata"),
            description="Example E with a document_ids contract that requests metadata: the contract applies to "
            "unpacked rows too (A13)",
            function="convert_text_batch",
            inputs=EXAMPLE_E_ROWS,
            options={"pad_to_length": 6, "pad_token_id": 0, "contract": DOCUMENT_IDS_METADATA_CONTRACT},
            expected={
                "attention_mask": long(E_IDS),
                "packed_token_indices": long([[0, 1, 2, -1, -1], [0, 1, 2, 3, 4]]),
                "cu_seqlens": int32([[0, 3], [0, 5]]),
                "max_seqlen": 5,
            },
        ),
        Case(
            name="test_example_e_pad_token_id_fills_only_the_padding",
            clauses=("unpacked-padding",),
            description="Example E with pad_token_id=99: only the pad slots of input_ids change",
            function="convert_text_batch",
            inputs=EXAMPLE_E_ROWS,
            options={"pad_to_length": 6, "pad_token_id": 99},
            expected={**EXAMPLE_E, "input_ids": long([[5, 6, 7, 99, 99], [8, 9, 10, 11, 12]])},
        ),
        Case(
            name="test_unpacked_packed_row_extends_its_pad_tail",
            clauses=("unpacked-padding",),
            description="a packed record with padding already ([1,2] [3] + 1 pad), padded to 6: the appended pads "
            "continue the tail's positions",
            function="convert_text_batch",
            inputs=text_batch_inputs(Row((1, 2, 3, 0), (0, 1, 0, 0), 1)),
            options={"pad_to_length": 6, "pad_token_id": 0},
            expected={
                "input_ids": long([[1, 2, 3, 0, 0]]),
                "labels": long([[2, 3, -100, -100, -100]]),
                "position_ids": long([[0, 1, 0, 0, 1]]),
                "padding_mask": bools([[F, F, F, T, T]]),
                "document_ids": long([[1, 1, 2, 0, 0]]),
            },
        ),
        Case(
            name="test_example_e_without_pad_to_length_is_ragged",
            clauses=("ctb-input-errors", "ctb-input-errors.8"),
            description="Example E's records without pad_to_length are ragged: ValueError naming both lengths",
            function="convert_text_batch",
            inputs=EXAMPLE_E_ROWS,
            error=("ValueError", (3, 5)),
        ),
    ] + [
        Case(
            name=f"test_example_e_unpacked_rejects_{name}",
            clauses=("unpacked-errors", f"unpacked-errors.{item}"),
            description=f"Example E's records, unpacked: {name.replace('_', ' ')}",
            function="convert_text_batch",
            inputs=EXAMPLE_E_ROWS,
            options=options,
            error=(kind, facts),
        )
        # (name, options, error type, facts, the [unpacked-errors] item)
        for name, options, kind, facts, item in (
            ("no_pad_token", {"pad_to_length": 6, "pad_token_id": None}, "ValueError", ("pad_token_id",), 3),
            ("pad_token_not_int", {"pad_to_length": 6, "pad_token_id": "0"}, "TypeError", ("pad_token_id",), 4),
            ("length_not_int", {"pad_to_length": 6.0, "pad_token_id": 0}, "TypeError", ("pad_to_length",), 1),
            # pad_to_length < 2 leaves every record of two or more tokens longer than it (item 5 too), and a
            # one-token record of L < 2 ([ctb-input-errors] item 7): item 2 cannot be alone in an input; both
            # items here need a ValueError naming pad_to_length
            ("length_below_2", {"pad_to_length": 1, "pad_token_id": 0}, "ValueError", ("pad_to_length",), 2),
            (
                "document_too_long",
                {"pad_to_length": 4, "pad_token_id": 0},
                "ValueError",
                (1, 5, 4, "pad_to_length"),
                5,
            ),
        )
    ]


def case_example_f():
    return Case(
        name="test_example_f_document_ids_with_metadata",
        clauses=(
            "batched-document-ids-mask",
            "batched-metadata",
            "batched-packed-seq-ids",
            "tb-dtypes",
            "tb-keys",
            "ctb-output-route",
        ),
        description="Example F: a document_ids contract that requests metadata",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"contract": DOCUMENT_IDS_METADATA_CONTRACT},
        expected={
            **EXAMPLE_A,
            "attention_mask": long(IDS),
            "packed_token_indices": long([[0, 1, 2, 3, 4, 5, 6, -1], [0, 1, 2, 3, 4, 5, 6, 7]]),
            "cu_seqlens": int32([[0, 3, 5, 7], [0, 5, 8, -1]]),
            "max_seqlen": 5,
        },
        keys=BATCHED_KEYS + METADATA_KEYS,
    )


def case_example_f_block_causal():
    return Case(
        name="test_example_f_block_causal_with_metadata",
        clauses=("batched-metadata", "batched-block-causal", "tb-keys", "ctb-output-route"),
        description="a block-causal contract that requests metadata gets the mask and the bundle",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"contract": {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": True}},
        expected={
            "attention_mask": EXAMPLE_A["attention_mask"],
            "cu_seqlens": int32([[0, 3, 5, 7], [0, 5, 8, -1]]),
            "max_seqlen": 5,
        },
        keys=BATCHED_KEYS + METADATA_KEYS,
    )


def case_document_ids_mask_without_metadata():
    return Case(
        name="test_document_ids_mask_without_metadata",
        clauses=("tb-keys", "batched-metadata", "ctb-output-route", "batched-document-ids-mask"),
        description="a document_ids contract without the metadata request: the ids mask and no bundle",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"contract": {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": False}},
        expected={"attention_mask": long(IDS)},
        keys=BATCHED_KEYS,
    )


def case_example_g():
    return Case(
        name="test_example_g_xdoc_metadata",
        clauses=("ctb-selected-ids", "ctb-xdoc", "batched-metadata", "batched-document-ids-mask"),
        description="Example G: xdoc with the F contract: cu_seqlens are the row boundaries",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"xdoc": True, "contract": DOCUMENT_IDS_METADATA_CONTRACT},
        expected={
            "cu_seqlens": int32([[0, 7], [0, 8]]),
            "max_seqlen": 8,
            "attention_mask": long(JOINED),
            "_packed_seq_ids": long(JOINED),
            "packed_token_indices": long([[0, 1, 2, 3, 4, 5, 6, -1], [0, 1, 2, 3, 4, 5, 6, 7]]),
            "document_ids": long(IDS),
            "labels": EXAMPLE_A["labels"],
        },
        keys=BATCHED_KEYS + METADATA_KEYS,
    )


def case_xdoc_segment_starts():
    return Case(
        name="test_xdoc_keeps_original_boundaries_for_segment_starts",
        clauses=("ctb-xdoc", "ctb-segment-starts"),
        description="Example C + mask_segment_starts: the original boundaries are masked, as in Example B",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"xdoc": True, "mask_segment_starts": True},
        expected={"labels": B_LABELS, "document_ids": long(IDS)},
    )


def case_ignore_index():
    cases = []
    for x in (-1, 7, -123456):
        cases.append(
            Case(
                name=f"test_ignore_index_{'m' if x < 0 else ''}{abs(x)}",
                clauses=("ctb-ignore-index",),
                description=f"masked labels hold exactly ignore_index={x}",
                function="convert_text_batch",
                inputs=EXAMPLE_ROWS,
                options={"ignore_index": x, "mask_segment_starts": True},
                expected={"labels": long([[12, 13, x, 22, x, 32, x, x], [42, 43, 44, 45, x, 52, 53, x]])},
            )
        )
    return cases


def case_pad_value_inside_text():
    return Case(
        name="test_pad_token_value_inside_real_text",
        clauses=("ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids"),
        description="a real token equal to the pad id keeps its label: padding is found by position",
        function="convert_text_batch",
        inputs=text_batch_inputs(Row((5, 0, 6, 0, 7, 0, 0), (0, 1, 2, 3, 4, 0, 1), 2)),
        expected={
            "labels": long([[0, 6, 0, 7, -100, -100]]),
            "padding_mask": bools([[F, F, F, F, F, T]]),
            "document_ids": long([[1, 1, 1, 1, 1, 0]]),
        },
    )


def case_no_positions_one_document():
    return Case(
        name="test_record_without_positions_is_one_document",
        clauses=("ctb-positions", "ctb-document-ids", "ctb-padding-labels"),
        description="no positions means one document 0..L-1; padding_length None means no padding",
        function="convert_text_batch",
        inputs=text_batch_inputs(Row((3, 4, 5, 6), None, None)),
        expected={
            "input_ids": long([[3, 4, 5]]),
            "labels": long([[4, 5, 6]]),
            "position_ids": long([[0, 1, 2]]),
            "padding_mask": bools([[F, F, F]]),
            "document_ids": long([[1, 1, 1]]),
        },
    )


def case_all_but_one_padding():
    return Case(
        name="test_all_but_one_token_padding",
        clauses=("ctb-padding-labels", "ctb-padding-mask", "ctb-document-ids", "batched-block-causal"),
        description="a row whose only real token is the first: every label ignored",
        function="convert_text_batch",
        inputs=text_batch_inputs(packed_row([[9]], padding=3)),
        expected={
            "input_ids": long([[9, 0, 0]]),
            "labels": long([[-100, -100, -100]]),
            "position_ids": long([[0, 0, 1]]),
            "padding_mask": bools([[F, T, T]]),
            "document_ids": long([[1, 0, 0]]),
            "attention_mask": block_mask("1.. ... ..."),
        },
    )


def case_s1_tiny_documents():
    return [
        Case(
            name="test_s1_two_one_token_documents",
            clauses=("ctb-shift", "ctb-cross-document-targets", "ctb-document-ids", "tb-shapes"),
            description="S = 1: documents [7][8] packed into L = 2; the label crosses documents",
            function="convert_text_batch",
            inputs=text_batch_inputs(packed_row([[7], [8]], padding=0)),
            expected={
                "input_ids": long([[7]]),
                "labels": long([[8]]),
                "document_ids": long([[1]]),
                "attention_mask": block_mask("1"),
            },
        ),
        Case(
            name="test_s1_two_one_token_documents_masked",
            clauses=("ctb-segment-starts",),
            description="S = 1 with mask_segment_starts: the only label is masked",
            function="convert_text_batch",
            inputs=text_batch_inputs(packed_row([[7], [8]], padding=0)),
            options={"mask_segment_starts": True},
            expected={"labels": long([[-100]])},
        ),
    ]


def case_token_fields():
    return [
        Case(
            name=f"test_token_field_{field}",
            clauses=("ctb-token-field",),
            description=f"the token field may be named {field}",
            function="convert_text_batch",
            inputs=text_batch_inputs({"row": Row((4, 5, 6), (0, 1, 0), 0), "field": field}),
            expected={"input_ids": long([[4, 5]]), "labels": long([[5, 6]])},
        )
        for field in ("tokens", "token_ids", "ids")
    ]


def case_output_format_errors():
    return [
        Case(
            name=f"test_unknown_output_format_{name}",
            clauses=("types-output-format",),
            description=f"output_format={value!r} is not a format",
            function="convert_text_batch",
            inputs=EXAMPLE_ROWS,
            options={"output_format": value},
            error=("ValueError", ("output_format", "batched", "thd", Value(value))),
        )
        for name, value in (("bshd", "BSHD"), ("empty", ""), ("none", None), ("capitalized", "Batched"))
    ]


GOOD = ROW_0  # L = 9
# (name, rows, error type, facts: a record index as an int, field names, lengths as ints; the
# [ctb-input-errors] item)
ERRORS = [
    ("empty_batch", [], "ValueError", ("sample_batch",), 2),
    ("one_token_row", [Row((5,), (0,), 0)], "ValueError", (0,), 7),
    ("ragged_rows", [GOOD, Row((1, 2, 3), (0, 1, 2), 0)], "ValueError", (9, 3), 8),
    ("positions_too_short", [Row((1, 2, 3), (0, 1), 0)], "ValueError", (0, "positions"), 9),
    ("positions_not_starting_at_0", [Row((1, 2, 3), (1, 2, 3), 0)], "ValueError", (0, "positions"), 10),
    ("negative_position", [Row((1, 2, 3), (0, -1, 0), 0)], "ValueError", (0, "positions"), 10),
    ("no_real_token", [GOOD, Row((0,) * 9, tuple(range(9)), 9)], "ValueError", (1, "padding_length"), 12),
    ("padding_longer_than_row", [Row((1, 2, 3), (0, 1, 2), 4)], "ValueError", (0, "padding_length"), 12),
    ("negative_padding", [Row((1, 2, 3), (0, 1, 2), -1)], "ValueError", (0, "padding_length"), 12),
]


def case_input_errors():
    return [
        Case(
            name=f"test_rejects_{name}",
            clauses=("ctb-input-errors", f"ctb-input-errors.{item}"),
            description=f"bad rows: {name}",
            function="convert_text_batch",
            inputs=text_batch_inputs(*bad),
            error=(kind, words),
        )
        for name, bad, kind, words, item in ERRORS
    ]


NINE = tuple(range(1, 10))
# (name, the bad record at index 2 behind two good ones, error type, facts, the [ctb-input-errors]
# item): the record's index 2 is not a number the message would hold anyway.
ERRORS_AT_RECORD_2 = [
    ("positions_too_short", Row(NINE, tuple(range(8)), 0), "ValueError", (2, "positions"), 9),
    ("positions_too_long", Row(NINE, tuple(range(10)), 0), "ValueError", (2, "positions"), 9),
    ("positions_not_starting_at_0", Row(NINE, tuple(range(1, 10)), 0), "ValueError", (2, "positions"), 10),
    ("negative_position", Row(NINE, (0, 1, -1, 0, 1, 2, 3, 4, 5), 0), "ValueError", (2, "positions"), 10),
    ("padding_bool", Row(NINE, tuple(range(9)), True), "TypeError", (2, "padding_length"), 11),
    ("no_real_token", Row((0,) * 9, tuple(range(9)), 9), "ValueError", (2, "padding_length"), 12),
    ("padding_longer_than_row", Row(NINE, tuple(range(9)), 10), "ValueError", (2, "padding_length"), 12),
    ("negative_padding", Row(NINE, tuple(range(9)), -1), "ValueError", (2, "padding_length"), 12),
]


def case_input_error_items():
    cases = [
        Case(
            name="test_rejects_ragged_rows_at_record_2_item_8",
            clauses=("ctb-input-errors", "ctb-input-errors.8"),
            description="rows of lengths 9, 9 and 3: ValueError naming the lengths",
            function="convert_text_batch",
            inputs=text_batch_inputs(GOOD, GOOD, Row((1, 2, 3), (0, 1, 2), 0)),
            error=("ValueError", (9, 3)),
        ),
    ]
    cases += [
        Case(
            name=f"test_rejects_{name}_at_record_2_item_{item}",
            clauses=("ctb-input-errors", f"ctb-input-errors.{item}"),
            description=f"record 2 of 3 is bad ({name.replace('_', ' ')}): the error names record 2 and the field",
            function="convert_text_batch",
            inputs=text_batch_inputs(GOOD, GOOD, bad),
            error=(kind, facts),
        )
        for name, bad, kind, facts, item in ERRORS_AT_RECORD_2
    ]
    tag = {"num_sequences": 1, "total_length": 8, "packing_efficiency": 8 / 9}
    cases += [
        Case(
            name=f"test_rejects_padding_length_{name}_item_11",
            clauses=("ctb-input-errors", "ctb-input-errors.11"),
            description=f"meta.padding_length of record 2 is {value!r}, not an int: TypeError naming record 2 "
            "and padding_length",
            function="convert_text_batch",
            inputs=text_batch_inputs(
                GOOD, GOOD, {"row": Row(NINE, tuple(range(9)), 1), "tags": {**tag, "padding_length": value}}
            ),
            error=("TypeError", (2, "padding_length")),
        )
        for name, value in (("str", "1"), ("float", 1.0))
    ]
    return cases


# (name, the field of record 1 that is replaced, its value, error type, the [ctb-input-errors] item).
# Record 1 is (1, 2, 3) with positions (0, 1, 2) otherwise: each value is its item's only fault (a
# 2-D value is [3, 1], so its length is L = 3 whichever way a backend counts it).
UNUSABLE_VALUES = [
    ("token_values_none", "input_ids", [1, None, 3], "TypeError", 4),
    ("token_values_strings", "input_ids", ["1", "2", "3"], "TypeError", 4),
    ("token_values_string", "input_ids", "abc", "TypeError", 4),
    ("token_values_bools", "input_ids", [True, False, True], "TypeError", 4),
    ("token_values_bool_tensor", "input_ids", torch.tensor([True, False, True]), "TypeError", 4),
    ("positions_floats", "positions", [0.0, 1.0, 2.0], "TypeError", 4),
    ("positions_float_tensor", "positions", torch.tensor([0.0, 1.0, 2.0]), "TypeError", 4),
    ("positions_bools", "positions", [False, True, True], "TypeError", 4),
    ("token_field_2d", "input_ids", torch.tensor([[1], [2], [3]]), "ValueError", 5),
    ("token_field_nested_list", "input_ids", [[1], [2], [3]], "ValueError", 5),
    ("positions_2d", "positions", torch.tensor([[0], [1], [2]]), "ValueError", 5),
    ("positions_nested_list", "positions", [[0], [1], [2]], "ValueError", 5),
    ("token_values_overflow", "input_ids", [1, 2**63, 3], "ValueError", 6),
    ("token_values_underflow", "input_ids", [1, -(2**63) - 1, 3], "ValueError", 6),
    ("positions_overflow", "positions", [0, 1, 2**63], "ValueError", 6),
]


def case_unusable_token_values():
    good = Row((1, 2, 3), (0, 1, 2), 0)
    return [
        Case(
            name=f"test_rejects_{name}",
            clauses=("ctb-input-errors", f"ctb-input-errors.{item}"),
            description=f"record 1's {field} {value!r}: {kind} naming the record and the field",
            function="convert_text_batch",
            inputs=text_batch_inputs(good, {"row": good, "extra": {field: value}}),
            error=(kind, (1, field)),
        )
        for name, field, value, kind, item in UNUSABLE_VALUES
    ]


def case_record_without_tokens():
    # Only the unpacked route can hold an empty record whose only fault is item 3: without
    # pad_to_length its L = 0 < 2 is item 7 too. No positions, padding_length None (D-2).
    return Case(
        name="test_rejects_record_without_tokens_item_3",
        clauses=("ctb-input-errors", "ctb-input-errors.3"),
        description="unpacked, pad_to_length=4: record 1 holds no token: ValueError naming record 1 and input_ids",
        function="convert_text_batch",
        inputs=text_batch_inputs(Row((1, 2, 3), None, None), Row((), None, None)),
        options={"pad_to_length": 4, "pad_token_id": 0},
        error=("ValueError", (1, "input_ids")),
    )


def case_float_token_list():
    return Case(
        name="test_rejects_float_token_list",
        clauses=("ctb-input-errors", "ctb-input-errors.4", "ctb-token-field"),
        description="a list of float tokens raises TypeError naming the record and the field",
        function="convert_text_batch",
        inputs=text_batch_inputs({"row": Row((1, 2, 3), (0, 1, 2), 0), "extra": {"input_ids": [1.5, 2.0, 3.0]}}),
        error=("TypeError", (0, "input_ids")),
    )


def case_missing_token_field():
    return Case(
        name="test_rejects_missing_token_field",
        clauses=("ctb-token-field", "ctb-input-errors"),
        description="a payload with no token field raises ValueError listing the candidates",
        function="convert_text_batch",
        inputs=text_batch_inputs({"row": Row((1, 2, 3), (0, 1, 2), 0), "field": "text"}),
        error=("ValueError", ("input_ids", "tokens", "token_ids", "ids")),
    )


def case_float_tokens():
    return Case(
        name="test_rejects_float_tokens",
        clauses=("ctb-input-errors", "ctb-input-errors.4"),
        description="a float token tensor raises TypeError naming the field",
        function="convert_text_batch",
        inputs=text_batch_inputs(
            {"row": Row((1, 2, 3), (0, 1, 2), 0), "extra": {"input_ids": torch.tensor([1.5, 2.0, 3.0])}}
        ),
        error=("TypeError", (0, "input_ids")),
    )


UNPACKED = text_batch_inputs(Row((5, 6, 7), None, None), Row((8, 9), None, None))


def case_unpacked_errors():
    # (name, options, error type, facts, the [unpacked-errors] item); length_below_2 is item 2 with
    # item 5 beside it (see case_example_e_variants)
    bad = [
        ("length_not_int", {"pad_to_length": 6.0, "pad_token_id": 0}, "TypeError", ("pad_to_length",), 1),
        ("length_bool", {"pad_to_length": True, "pad_token_id": 0}, "TypeError", ("pad_to_length",), 1),
        ("length_below_2", {"pad_to_length": 1, "pad_token_id": 0}, "ValueError", ("pad_to_length",), 2),
        ("pad_id_missing", {"pad_to_length": 6}, "ValueError", ("pad_token_id",), 3),
        ("pad_id_not_int", {"pad_to_length": 6, "pad_token_id": "0"}, "TypeError", ("pad_token_id",), 4),
        ("pad_id_bool", {"pad_to_length": 6, "pad_token_id": False}, "TypeError", ("pad_token_id",), 4),
        ("record_too_long", {"pad_to_length": 2, "pad_token_id": 0}, "ValueError", (0, 3, 2, "pad_to_length"), 5),
    ]
    return [
        Case(
            name=f"test_unpacked_rejects_{n}",
            clauses=("unpacked-errors", f"unpacked-errors.{item}"),
            description=f"unpacked: {n}",
            function="convert_text_batch",
            inputs=UNPACKED,
            options=o,
            error=(k, w),
        )
        for n, o, k, w, item in bad
    ]


def case_pad_token_only():
    return Case(
        name="test_pad_token_id_without_length_is_ignored",
        clauses=("unpacked-pad-token-only-with-length",),
        description="pad_token_id without pad_to_length gives Example A unchanged",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"pad_token_id": 99},
        expected=EXAMPLE_A,
        keys=BATCHED_KEYS,
    )


def case_option_type_errors():
    # (name, options, facts, the [ctb-option-types] item)
    bad = [
        ("ignore_index_float", {"ignore_index": -100.5}, ("ignore_index",), 1),
        ("ignore_index_none", {"ignore_index": None}, ("ignore_index",), 1),
        ("ignore_index_bool", {"ignore_index": True}, ("ignore_index",), 1),
        ("mask_segment_starts_str", {"mask_segment_starts": "no"}, ("mask_segment_starts",), 2),
        ("mask_segment_starts_int", {"mask_segment_starts": 1}, ("mask_segment_starts",), 2),
        ("xdoc_str", {"xdoc": "no"}, ("allow_cross_document_attention",), 3),
        ("xdoc_none", {"xdoc": None}, ("allow_cross_document_attention",), 3),
    ]
    return [
        Case(
            name=f"test_rejects_option_{n}",
            clauses=("ctb-option-types", f"ctb-option-types.{item}"),
            description=f"a mistyped option raises TypeError naming it: {o}",
            function="convert_text_batch",
            inputs=EXAMPLE_ROWS,
            options=o,
            error=("TypeError", w),
        )
        for n, o, w, item in bad
    ]


def case_no_positions_pad_tail():
    return Case(
        name="test_record_without_positions_pad_tail_restarts",
        clauses=("ctb-positions", "ctb-document-ids", "ctb-padding-mask", "ctb-padding-labels"),
        description="records without positions: 0..L-n-1 over the real tokens, the pad tail restarts at 0 "
        "([5,6,7,0,0], n=2 -> position_ids [0,1,2,0])",
        function="convert_text_batch",
        inputs=text_batch_inputs(
            Row((5, 6, 7, 0, 0), None, 2), Row((5, 6, 0, 0, 0), None, 3), Row((1, 2, 3, 4, 5), None, None)
        ),
        expected={
            "input_ids": long([[5, 6, 7, 0], [5, 6, 0, 0], [1, 2, 3, 4]]),
            "labels": long([[6, 7, -100, -100], [6, -100, -100, -100], [2, 3, 4, 5]]),
            "position_ids": long([[0, 1, 2, 0], [0, 1, 0, 1], [0, 1, 2, 3]]),
            "padding_mask": bools([[F, F, F, T], [F, F, T, T], [F] * 4]),
            "document_ids": long([[1, 1, 1, 0], [1, 1, 0, 0], [1] * 4]),
            "attention_document_ids": long([[1, 1, 1, 0], [1, 1, 0, 0], [1] * 4]),
        },
        keys=BATCHED_KEYS,
    )


def case_unpacked_no_positions_with_padding():
    return Case(
        name="test_unpacked_record_without_positions_extends_its_pad_tail",
        clauses=("unpacked-padding", "ctb-positions"),
        description="[5,6,7,0] without positions, n=1 (pad tail [0]), padded to 6: the appended pads continue "
        "the tail (1, 2), as the pre-padded record [5,6,7,0,0,0], n=3, numbers it",
        function="convert_text_batch",
        inputs=text_batch_inputs(Row((5, 6, 7, 0), None, 1)),
        options={"pad_to_length": 6, "pad_token_id": 0},
        expected={
            "input_ids": long([[5, 6, 7, 0, 0]]),
            "labels": long([[6, 7, -100, -100, -100]]),
            "position_ids": long([[0, 1, 2, 0, 1]]),
            "padding_mask": bools([[F, F, F, T, T]]),
            "document_ids": long([[1, 1, 1, 0, 0]]),
        },
        keys=BATCHED_KEYS,
    )


def case_xdoc_bound_in_convert():
    def contract(bound, mask_type="block_causal", metadata=False):
        return {
            "packed_mask_type": mask_type,
            "return_packed_sequence_metadata": metadata,
            "max_sequence_length": bound,
        }

    pad_tail = {
        "position_ids": long([[0, 1, 0, 1, 2, 3, 4]]),
        "document_ids": long([[1, 1, 0, 0, 0, 0, 0]]),
        "attention_document_ids": long([[1, 1, 0, 0, 0, 0, 0]]),
    }
    packed = text_batch_inputs(packed_row([[7, 8]], padding=6))
    bare = text_batch_inputs(Row((7, 8, 0, 0, 0, 0, 0, 0), None, 6))
    forms = (  # (name, inputs, what, max_sequence_length)
        ("", packed, "[7,8] + 6 pads (pack_flat positions)", 2),
        ("_4", packed, "[7,8] + 6 pads (pack_flat positions)", 4),
        ("_without_positions_2", bare, "[7,8] + 6 pads without positions", 2),
        ("_without_positions", bare, "[7,8] + 6 pads without positions", 4),
    )
    jump = text_batch_inputs(Row((1, 2, 3, 4, 5, 6, 0), (0, 1, 2, 0, 1, 5, 0), 1))
    return [
        Case(
            name=f"test_xdoc_bound_skips_the_pad_tail{suffix}",
            clauses=("xdoc-contract", "ctb-xdoc", "ctb-positions"),
            description=f"{what}, xdoc, max_sequence_length {bound}: the translated positions are [0,1]; the pad "
            "tail's positions (up to 4) are not bounded",
            function="convert_text_batch",
            inputs=inputs,
            options={"xdoc": True, "contract": contract(bound)},
            expected=pad_tail,
        )
        for suffix, inputs, what, bound in forms
    ] + [
        Case(
            name="test_xdoc_bound_reached_by_a_real_token",
            clauses=("xdoc-contract", "ctb-xdoc"),
            description="subdocuments [1,2,3] and [4,5,6] (positions 0,1,5) + 1 pad: translated input positions "
            "[0,1,2,3,4,8]; max_sequence_length 6 raises naming it, 6 and 8",
            function="convert_text_batch",
            inputs=jump,
            options={"xdoc": True, "contract": contract(6)},
            error=("ValueError", ("max_sequence_length", 6, 8)),
        ),
        Case(
            name="test_xdoc_bound_reached_by_a_real_token_document_ids",
            clauses=("xdoc-contract", "ctb-xdoc"),
            description="the same record under a document_ids contract that requests metadata, "
            "max_sequence_length 6: ValueError naming it, 6 and 8",
            function="convert_text_batch",
            inputs=jump,
            options={"xdoc": True, "contract": contract(6, "document_ids", True)},
            error=("ValueError", ("max_sequence_length", 6, 8)),
        ),
        Case(
            name="test_xdoc_bound_above_the_largest_translated_position",
            clauses=("xdoc-contract", "ctb-xdoc"),
            description="the same record, document_ids contract, max_sequence_length 9: translated positions "
            "[0,1,2,3,4,8] pass",
            function="convert_text_batch",
            inputs=jump,
            options={"xdoc": True, "contract": contract(9, "document_ids", True)},
            expected={"position_ids": long([[0, 1, 2, 3, 4, 8]])},
        ),
    ]


def case_xdoc_bound_at_the_largest_translated_position():
    """[xdoc-contract] exactly at its bound in ``convert_text_batch`` (enable_xdoc_attention's own
    equality case is test_xdoc_bound_reached): the jump record's translated input positions are
    [0,1,2,3,4,8], so max_sequence_length 8 (equal to the largest) raises naming it and 8, and 9
    (test_xdoc_bound_above_the_largest_translated_position) passes; on both mask types and THD."""
    jump = text_batch_inputs(Row((1, 2, 3, 4, 5, 6, 0), (0, 1, 2, 0, 1, 5, 0), 1))
    variants = (  # (name suffix, contract, output_format)
        ("", {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": False}, "batched"),
        ("_document_ids", {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True}, "batched"),
        ("_thd", {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": False}, "thd"),
    )
    return [
        Case(
            name=f"test_xdoc_bound_equal_to_the_largest_translated_position{suffix}",
            clauses=("xdoc-contract", "ctb-xdoc"),
            description=f"translated input positions [0,1,2,3,4,8], max_sequence_length 8 ({contract['packed_mask_type']}, "
            f"{output_format}): a translated position equal to the bound raises ValueError naming it and 8",
            function="convert_text_batch",
            inputs=jump,
            options={"xdoc": True, "contract": {**contract, "max_sequence_length": 8}, "output_format": output_format},
            error=("ValueError", ("max_sequence_length", 8)),
        )
        for suffix, contract, output_format in variants
    ]


def case_unpacked_record_as_long_as_pad_to_length():
    """[unpacked-errors] item 5 at its bound: a record exactly ``pad_to_length`` long is padded by
    nothing and is valid (one longer is test_unpacked_rejects_record_too_long)."""
    return Case(
        name="test_unpacked_record_as_long_as_pad_to_length",
        clauses=("unpacked-errors", "unpacked-errors.5", "unpacked-padding"),
        description="records [5,6,7] and [8,9,10,11] (exactly pad_to_length 4) without positions: valid; only the "
        "first gets a pad",
        function="convert_text_batch",
        inputs=text_batch_inputs(Row((5, 6, 7), None, None), Row((8, 9, 10, 11), None, None)),
        options={"pad_to_length": 4, "pad_token_id": 0},
        expected={
            "input_ids": long([[5, 6, 7], [8, 9, 10]]),
            "labels": long([[6, 7, -100], [9, 10, 11]]),
            "position_ids": long([[0, 1, 2], [0, 1, 2]]),
            "padding_mask": bools([[F, F, F], [F, F, F]]),
            "document_ids": long([[1, 1, 1], [1, 1, 1]]),
        },
        keys=BATCHED_KEYS,
    )


def case_unpacked_pad_to_length_2():
    """[unpacked-errors] item 2 at its bound (issue 31): ``pad_to_length`` 2, the smallest the
    item leaves valid (1 is test_unpacked_rejects_length_below_2), on the batched route: each row
    is one input token (S = 1) and its target."""
    return Case(
        name="test_unpacked_pad_to_length_2",
        clauses=("unpacked-errors", "unpacked-errors.2", "unpacked-padding"),
        description="records [5,6] and [7] without positions, pad_to_length 2 (the smallest valid), pad_token_id 0: "
        "rows [5,6] and [7,0], one input token each; the second row's target is padding",
        function="convert_text_batch",
        inputs=text_batch_inputs(Row((5, 6), None, None), Row((7,), None, None)),
        options={"pad_to_length": 2, "pad_token_id": 0},
        expected={
            "input_ids": long([[5], [7]]),
            "labels": long([[6], [-100]]),
            "position_ids": long([[0], [0]]),
            "padding_mask": bools([[F], [F]]),
            "document_ids": long([[1], [1]]),
        },
        keys=BATCHED_KEYS,
    )


# (name, the field of record 1 replaced, its value, error type, the [ctb-input-errors] item): a
# per-element fault in the FIRST or the LAST column of record 1 = (1, 2, 3), positions (0, 1, 2);
# each value is its item's only fault (a float of the element's own value is not an int; at
# column 0 of positions a negative value is item 10 twice over: it does not start at 0 either).
EDGE_COLUMN_FAULTS = [
    ("token_float_first_column", "input_ids", [1.0, 2, 3], "TypeError", 4),
    ("token_float_last_column", "input_ids", [1, 2, 3.0], "TypeError", 4),
    ("token_none_last_column", "input_ids", [1, 2, None], "TypeError", 4),
    ("position_float_first_column", "positions", [0.0, 1, 2], "TypeError", 4),
    ("position_float_last_column", "positions", [0, 1, 2.0], "TypeError", 4),
    ("token_overflow_first_column", "input_ids", [2**63, 2, 3], "ValueError", 6),
    ("token_overflow_last_column", "input_ids", [1, 2, 2**63], "ValueError", 6),
    ("token_underflow_first_column", "input_ids", [-(2**63) - 1, 2, 3], "ValueError", 6),
    ("token_underflow_last_column", "input_ids", [1, 2, -(2**63) - 1], "ValueError", 6),
    ("position_overflow_first_column", "positions", [2**63, 1, 2], "ValueError", 6),
    ("negative_position_first_column", "positions", [-1, 1, 2], "ValueError", 10),
    ("negative_position_last_column", "positions", [0, 1, -1], "ValueError", 10),
    ("int64_min_position_last_column", "positions", [0, 1, -(2**63)], "ValueError", 10),
]


def case_faults_in_the_first_and_last_column():
    good = Row((1, 2, 3), (0, 1, 2), 0)
    return [
        Case(
            name=f"test_rejects_{name}",
            clauses=("ctb-input-errors", f"ctb-input-errors.{item}"),
            description=f"record 1's {field} {value!r}: a fault at the row's edge, {kind} naming the record and "
            "the field",
            function="convert_text_batch",
            inputs=text_batch_inputs(good, {"row": good, "extra": {field: value}}),
            error=(kind, (1, field)),
        )
        for name, field, value, kind, item in EDGE_COLUMN_FAULTS
    ]


def _unsigned(values, dtype) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.uint64).to(dtype)


# (name, the field of record 1 given as a numpy uint64 array, its values, the [ctb-input-errors]
# item): values beyond int64 in the first, an inner and the last column
UNSIGNED_BEYOND_INT64 = [
    ("numpy_uint64_token_2_63_first_column", "input_ids", [2**63, 2, 3]),
    ("numpy_uint64_token_max_last_column", "input_ids", [1, 2, 2**64 - 1]),
    ("numpy_uint64_token_2_63_inner_column", "input_ids", [1, 2**63, 3]),
    ("numpy_uint64_position_2_63_last_column", "positions", [0, 1, 2**63]),
    ("numpy_uint64_position_max_inner_column", "positions", [0, 2**64 - 1, 2]),
]


def case_numpy_unsigned_payloads():
    """Numpy unsigned arrays as payload fields ([tb-dtypes]: any payload dtype): a uint64 value
    beyond int64 raises ValueError naming the record and the field ([ctb-input-errors] item 6:
    read through int64 it would wrap to a negative value); uint8 .. uint64 arrays holding their
    dtype's largest value, int64's largest 2**63 - 1 for uint64, in the first and the last
    column are valid and converted as they are."""
    good = Row((1, 2, 3), (0, 1, 2), 0)
    cases = [
        Case(
            name=f"test_rejects_{name}",
            clauses=("ctb-input-errors", "ctb-input-errors.6"),
            description=f"record 1's {field} as a numpy uint64 array {values}: ValueError naming the record and "
            "the field",
            function="convert_text_batch",
            inputs=text_batch_inputs(
                good, {"row": good, "extra": {field: _unsigned(values, torch.uint64)}, "numpy": (field,)}
            ),
            error=("ValueError", (1, field)),
        )
        for name, field, values in UNSIGNED_BEYOND_INT64
    ]
    top = 2**63 - 1
    # record 0: tokens uint64 [2**63-1, 7, 2**63-1], positions uint8 [0, 255, 0] (a jump, then a new
    # subdocument in the last column); record 1: tokens uint16 [1, 65535, 65535], positions uint32
    # [0, 1, 2**32-1]; no padding. The rows hold stand-in positions of the same zeros (their packing
    # tags count them); the payloads are the unsigned arrays.
    cases.append(
        Case(
            name="test_numpy_unsigned_payloads_at_their_largest_values",
            clauses=("tb-dtypes", "ctb-shift", "ctb-positions", "ctb-input-errors", "ctb-input-errors.6"),
            description="numpy uint64 tokens at int64's largest (first and last column), uint8 positions at 255, "
            "uint16 tokens at 65535, uint32 positions at 2**32-1 (last column): valid, converted as they are",
            function="convert_text_batch",
            inputs=text_batch_inputs(
                {
                    "row": Row((top, 7, top), (0, 1, 0), 0),
                    "extra": {
                        "input_ids": _unsigned([top, 7, top], torch.uint64),
                        "positions": _unsigned([0, 255, 0], torch.uint8),
                    },
                    "numpy": ("input_ids", "positions"),
                },
                {
                    "row": Row((1, 65535, 65535), (0, 1, 1), 0),
                    "extra": {
                        "input_ids": _unsigned([1, 65535, 65535], torch.uint16),
                        "positions": _unsigned([0, 1, 2**32 - 1], torch.uint32),
                    },
                    "numpy": ("input_ids", "positions"),
                },
            ),
            expected={
                "input_ids": long([[top, 7], [1, 65535]]),
                "labels": long([[7, top], [65535, 65535]]),
                "position_ids": long([[0, 255], [0, 1]]),
                "padding_mask": bools([[F, F], [F, F]]),
                "document_ids": long([[1, 1], [1, 1]]),
            },
            keys=BATCHED_KEYS,
        )
    )
    return cases
