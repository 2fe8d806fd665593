"""Golden cases for SPEC.md's "``TrainingBatch`` fields", "``convert_text_batch``" and "Output
formats": ``convert_text_batch`` (worked examples A-G, bad inputs, the unpacked route). Every
``expected`` is a hand-written literal from SPEC.md's worked examples, copied from
conformance/test_convert_text_batch.py.
"""

from __future__ import annotations

import torch

from conformance.golden.api import Case, Row, Value, block_mask, bools, int32, long, packed_row, rows

F, T = False, True
EXAMPLE_ROWS = rows(
    Row(tokens=(11, 12, 13, 21, 22, 31, 32, 0, 0), positions=(0, 1, 2, 0, 1, 0, 1, 0, 1), padding_length=2),
    Row(tokens=(41, 42, 43, 44, 45, 51, 52, 53, 0), positions=(0, 1, 2, 3, 4, 0, 1, 2, 0), padding_length=1),
)
IDS = [[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]]
JOINED = [[1, 1, 1, 1, 1, 1, 1, 0], [1] * 8]
BATCHED_KEYS = (
    "input_ids",
    "labels",
    "position_ids",
    "padding_mask",
    "document_ids",
    "attention_document_ids",
    "_packed_seq_ids",
    "attention_mask",
)
META_KEYS = ("packed_token_indices", "cu_seqlens", "max_seqlen")
THD_KEYS = (
    "input_ids",
    "labels",
    "position_ids",
    "padding_mask",
    "document_ids",
    "attention_document_ids",
    "seq_lens",
    "seq_lens_padded",
    "qkv_format",
)
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
DOC_META = {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True}
CORE = (
    "ctb-shift",
    "ctb-positions",
    "ctb-padding-labels",
    "ctb-padding-mask",
    "ctb-document-ids",
    "ctb-attention-ids",
    "tb-shapes",
    "tb-dtypes",
    "tb-keys",
)


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
        clauses=("ctb-xdoc", "ctb-selected-ids", "xdoc-positions", "xdoc-attention-ids"),
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


def case_example_d():
    return Case(
        name="test_example_d_thd",
        clauses=("thd-lengths", "thd-qkv-format", "ctb-output-route", "tb-keys"),
        description="Example D: THD output of Example A; row 0's pad slot joins its last subdocument",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"output_format": "thd"},
        expected={
            **{k: v for k, v in EXAMPLE_A.items() if k in THD_KEYS},
            "seq_lens": long([[3, 2, 2], [5, 3, -1000]]),
            "seq_lens_padded": long([[3, 2, 3], [5, 3, -1000]]),
            "qkv_format": "thd",
        },
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


def case_example_e():
    return Case(
        name="test_example_e_unpacked",
        clauses=("unpacked-padding", "unpacked-same-route", "tb-shapes"),
        description="Example E: records without positions padded to pad_to_length=6",
        function="convert_text_batch",
        inputs=rows(Row((5, 6, 7), None, None), Row((8, 9, 10, 11, 12), None, None)),
        options={"pad_to_length": 6, "pad_token_id": 0},
        expected={
            "input_ids": long([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]]),
            "labels": long([[6, 7, -100, -100, -100], [9, 10, 11, 12, -100]]),
            "position_ids": long([[0, 1, 2, 0, 1], [0, 1, 2, 3, 4]]),
            "padding_mask": bools([[F, F, F, T, T], [F] * 5]),
            "document_ids": long([[1, 1, 1, 0, 0], [1] * 5]),
        },
        keys=BATCHED_KEYS,
    )


def case_example_f():
    return Case(
        name="test_example_f_document_ids_with_metadata",
        clauses=("batched-document-ids-mask", "batched-metadata", "batched-packed-seq-ids", "tb-dtypes", "tb-keys"),
        description="Example F: a document_ids contract that requests metadata",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"contract": DOC_META},
        expected={
            **EXAMPLE_A,
            "attention_mask": long(IDS),
            "packed_token_indices": long([[0, 1, 2, 3, 4, 5, 6, -1], [0, 1, 2, 3, 4, 5, 6, 7]]),
            "cu_seqlens": int32([[0, 3, 5, 7], [0, 5, 8, -1]]),
            "max_seqlen": 5,
        },
        keys=BATCHED_KEYS + META_KEYS,
    )


def case_example_f_block_causal():
    return Case(
        name="test_example_f_block_causal_with_metadata",
        clauses=("batched-metadata", "batched-block-causal"),
        description="a block-causal contract that requests metadata gets the mask and the bundle",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"contract": {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": True}},
        expected={
            "attention_mask": EXAMPLE_A["attention_mask"],
            "cu_seqlens": int32([[0, 3, 5, 7], [0, 5, 8, -1]]),
            "max_seqlen": 5,
        },
        keys=BATCHED_KEYS + META_KEYS,
    )


def case_example_g():
    return Case(
        name="test_example_g_xdoc_metadata",
        clauses=("ctb-selected-ids", "ctb-xdoc", "batched-metadata"),
        description="Example G: xdoc with the F contract: cu_seqlens are the row boundaries",
        function="convert_text_batch",
        inputs=EXAMPLE_ROWS,
        options={"xdoc": True, "contract": DOC_META},
        expected={
            "cu_seqlens": int32([[0, 7], [0, 8]]),
            "max_seqlen": 8,
            "attention_mask": long(JOINED),
            "document_ids": long(IDS),
            "labels": EXAMPLE_A["labels"],
        },
        keys=BATCHED_KEYS + META_KEYS,
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
        clauses=("ctb-padding-labels", "ctb-padding-mask"),
        description="a real token equal to the pad id keeps its label: padding is found by position",
        function="convert_text_batch",
        inputs=rows(Row((5, 0, 6, 0, 7, 0, 0), (0, 1, 2, 3, 4, 0, 1), 2)),
        expected={
            "labels": long([[0, 6, 0, 7, -100, -100]]),
            "padding_mask": bools([[F, F, F, F, F, T]]),
            "document_ids": long([[1, 1, 1, 1, 1, 0]]),
        },
    )


def case_no_positions_one_document():
    return Case(
        name="test_record_without_positions_is_one_document",
        clauses=("ctb-positions", "ctb-document-ids"),
        description="no positions means one document 0..L-1; padding_length None means no padding",
        function="convert_text_batch",
        inputs=rows(Row((3, 4, 5, 6), None, None)),
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
        inputs=rows(packed_row([[9]], padding=3)),
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
            clauses=("ctb-shift", "ctb-cross-document-targets", "tb-shapes"),
            description="S = 1: documents [7][8] packed into L = 2; the label crosses documents",
            function="convert_text_batch",
            inputs=rows(packed_row([[7], [8]], padding=0)),
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
            inputs=rows(packed_row([[7], [8]], padding=0)),
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
            inputs=rows({"row": Row((4, 5, 6), (0, 1, 0), 0), "field": field}),
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


GOOD = Row((11, 12, 13, 21, 22, 31, 32, 0, 0), (0, 1, 2, 0, 1, 0, 1, 0, 1), 2)
# (name, rows, error type, facts: a record index as an int, field names, lengths as ints)
ERRORS = [
    ("empty_batch", [], "ValueError", ("sample_batch",)),
    ("one_token_row", [Row((5,), (0,), 0)], "ValueError", (0,)),
    ("ragged_rows", [GOOD, Row((1, 2, 3), (0, 1, 2), 0)], "ValueError", (9, 3)),
    ("positions_too_short", [Row((1, 2, 3), (0, 1), 0)], "ValueError", (0, "positions")),
    ("positions_not_starting_at_0", [Row((1, 2, 3), (1, 2, 3), 0)], "ValueError", (0, "positions")),
    ("negative_position", [Row((1, 2, 3), (0, -1, 0), 0)], "ValueError", (0, "positions")),
    ("no_real_token", [GOOD, Row((0,) * 9, tuple(range(9)), 9)], "ValueError", (1, "padding_length")),
    ("padding_longer_than_row", [Row((1, 2, 3), (0, 1, 2), 4)], "ValueError", (0, "padding_length")),
    ("negative_padding", [Row((1, 2, 3), (0, 1, 2), -1)], "ValueError", (0, "padding_length")),
]


def case_input_errors():
    return [
        Case(
            name=f"test_rejects_{name}",
            clauses=("ctb-input-errors",),
            description=f"bad rows: {name}",
            function="convert_text_batch",
            inputs=rows(*bad),
            error=(kind, words),
        )
        for name, bad, kind, words in ERRORS
    ]


def case_missing_token_field():
    return Case(
        name="test_rejects_missing_token_field",
        clauses=("ctb-token-field", "ctb-input-errors"),
        description="a payload with no token field raises ValueError listing the candidates",
        function="convert_text_batch",
        inputs=rows({"row": Row((1, 2, 3), (0, 1, 2), 0), "field": "text"}),
        error=("ValueError", ("input_ids", "tokens", "token_ids", "ids")),
    )


def case_float_tokens():
    return Case(
        name="test_rejects_float_tokens",
        clauses=("ctb-input-errors",),
        description="a float token tensor raises TypeError naming the field",
        function="convert_text_batch",
        inputs=rows({"row": Row((1, 2, 3), (0, 1, 2), 0), "extra": {"input_ids": torch.tensor([1.5, 2.0, 3.0])}}),
        error=("TypeError", (0, "input_ids")),
    )


UNPACKED = rows(Row((5, 6, 7), None, None), Row((8, 9), None, None))


def case_unpacked_errors():
    bad = [
        ("length_not_int", {"pad_to_length": 6.0, "pad_token_id": 0}, "TypeError", ("pad_to_length",)),
        ("length_below_2", {"pad_to_length": 1, "pad_token_id": 0}, "ValueError", ("pad_to_length",)),
        ("pad_id_missing", {"pad_to_length": 6}, "ValueError", ("pad_token_id",)),
        ("pad_id_not_int", {"pad_to_length": 6, "pad_token_id": "0"}, "TypeError", ("pad_token_id",)),
        ("record_too_long", {"pad_to_length": 2, "pad_token_id": 0}, "ValueError", (0, 3, 2, "pad_to_length")),
    ]
    return [
        Case(
            name=f"test_unpacked_rejects_{n}",
            clauses=("unpacked-errors",),
            description=f"unpacked: {n}",
            function="convert_text_batch",
            inputs=UNPACKED,
            options=o,
            error=(k, w),
        )
        for n, o, k, w in bad
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
    bad = [
        ("ignore_index_float", {"ignore_index": -100.5}, ("ignore_index",)),
        ("ignore_index_bool", {"ignore_index": True}, ("ignore_index",)),
        ("mask_segment_starts_str", {"mask_segment_starts": "no"}, ("mask_segment_starts",)),
        ("xdoc_str", {"xdoc": "no"}, ("allow_cross_document_attention",)),
    ]
    return [
        Case(
            name=f"test_rejects_option_{n}",
            clauses=("ctb-option-types",),
            description=f"a mistyped option raises TypeError naming it: {o}",
            function="convert_text_batch",
            inputs=EXAMPLE_ROWS,
            options=o,
            error=("TypeError", w),
        )
        for n, o, w in bad
    ]


def case_no_positions_pad_tail():
    return Case(
        name="test_record_without_positions_pad_tail_restarts",
        clauses=("ctb-positions", "ctb-document-ids", "ctb-padding-mask", "ctb-padding-labels"),
        description="records without positions: 0..L-n-1 over the real tokens, the pad tail restarts at 0 "
        "([5,6,7,0,0], n=2 -> position_ids [0,1,2,0])",
        function="convert_text_batch",
        inputs=rows(Row((5, 6, 7, 0, 0), None, 2), Row((5, 6, 0, 0, 0), None, 3), Row((1, 2, 3, 4, 5), None, None)),
        expected={
            "input_ids": long([[5, 6, 7, 0], [5, 6, 0, 0], [1, 2, 3, 4]]),
            "labels": long([[6, 7, -100, -100], [6, -100, -100, -100], [2, 3, 4, 5]]),
            "position_ids": long([[0, 1, 2, 0], [0, 1, 0, 1], [0, 1, 2, 3]]),
            "padding_mask": bools([[F, F, F, T], [F, F, T, T], [F] * 4]),
            "document_ids": long([[1, 1, 1, 0], [1, 1, 0, 0], [1] * 4]),
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
        inputs=rows(Row((5, 6, 7, 0), None, 1)),
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
    def contract(bound):
        return {
            "packed_mask_type": "block_causal",
            "return_packed_sequence_metadata": False,
            "max_sequence_length": bound,
        }

    pad_tail = {
        "position_ids": long([[0, 1, 0, 1, 2, 3, 4]]),
        "document_ids": long([[1, 1, 0, 0, 0, 0, 0]]),
        "attention_document_ids": long([[1, 1, 0, 0, 0, 0, 0]]),
    }
    return [
        Case(
            name="test_xdoc_bound_skips_the_pad_tail",
            clauses=("xdoc-contract", "ctb-xdoc"),
            description="[7,8] + 6 pads, xdoc, max_sequence_length 2: the translated positions are [0,1]; the pad "
            "tail's positions (up to 4) are not bounded",
            function="convert_text_batch",
            inputs=rows(packed_row([[7, 8]], padding=6)),
            options={"xdoc": True, "contract": contract(2)},
            expected=pad_tail,
        ),
        Case(
            name="test_xdoc_bound_skips_the_pad_tail_without_positions",
            clauses=("xdoc-contract", "ctb-positions"),
            description="the same record without positions, max_sequence_length 4",
            function="convert_text_batch",
            inputs=rows(Row((7, 8, 0, 0, 0, 0, 0, 0), None, 6)),
            options={"xdoc": True, "contract": contract(4)},
            expected=pad_tail,
        ),
        Case(
            name="test_xdoc_bound_reached_by_a_real_token",
            clauses=("xdoc-contract", "ctb-xdoc"),
            description="subdocuments [1,2,3] and [4,5,6] (positions 0,1,5) + 1 pad: translated input positions "
            "[0,1,2,3,4,8]; max_sequence_length 6 raises naming it, 6 and 8",
            function="convert_text_batch",
            inputs=rows(Row((1, 2, 3, 4, 5, 6, 0), (0, 1, 2, 0, 1, 5, 0), 1)),
            options={"xdoc": True, "contract": contract(6)},
            error=("ValueError", ("max_sequence_length", 6, 8)),
        ),
    ]
