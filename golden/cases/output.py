"""Golden cases for SPEC.md's "Output formats" on tensor mappings: ``convert_batch_output``
(batched / THD). Canon literals are written by hand from the clauses; generated cases are seeded
random mappings whose expected values come from the reference.
"""

from __future__ import annotations

import random

from batchspec.conformance.golden.api import THD_PAD, Case, Value, long, random_run_ids

IDS = long([[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]])


def case_output_formats():
    ids = {"document_ids": IDS, "attention_document_ids": IDS}
    # (name, ids, the row named, the [thd-errors] item)
    bad = [
        ("no_positive_id", [[0, 0, 0]], 0, 2),
        ("interior_zero", [[1, 0, 1]], 0, 3),
        ("id_reappears", [[1, 1, 2, 1]], 0, 4),
        ("second_row", [[1, 1, 1, 1], [1, 2, 0, 2]], 1, 3),
    ]
    return [
        Case(
            name="test_output_batched_unchanged",
            clauses=("batched-unchanged",),
            description='"batched" returns the mapping unchanged',
            function="convert_batch_output",
            inputs={"batch": ids},
            options={"output_format": "batched"},
            expected=ids,
            keys=("document_ids", "attention_document_ids"),
        ),
        Case(
            name="test_output_thd_example_d",
            clauses=("thd-lengths", "thd-qkv-format"),
            description="Example D's lengths from the selected ids",
            function="convert_batch_output",
            inputs={"batch": ids},
            options={"output_format": "thd"},
            expected={
                "seq_lens": long([[3, 2, 2], [5, 3, THD_PAD]]),
                "seq_lens_padded": long([[3, 2, 3], [5, 3, THD_PAD]]),
                "qkv_format": "thd",
            },
            keys=("document_ids", "attention_document_ids", "seq_lens", "seq_lens_padded", "qkv_format"),
        ),
        Case(
            name="test_output_unknown_format",
            clauses=("types-output-format", "thd-errors"),
            description="an unknown format raises ValueError",
            function="convert_batch_output",
            inputs={"batch": ids},
            options={"output_format": "bshd"},
            error=("ValueError", ("output_format", "batched", "thd", Value("bshd"))),
        ),
    ] + [
        Case(
            name=f"test_output_thd_rejects_{n}",
            clauses=("thd-errors", f"thd-errors.{item}"),
            description=f"THD: {n}",
            function="convert_batch_output",
            inputs={"batch": {"document_ids": long(i), "attention_document_ids": long(i)}},
            options={"output_format": "thd"},
            error=("ValueError", (r,)),
        )
        for n, i, r, item in bad
    ]


def case_output_thd_generated():
    rng = random.Random(20260208)
    cases = []
    for i in range(8):
        batch_size, width = rng.choice([(1, 1), (1, 7), (2, 5), (4, 3)])
        ids = long([random_run_ids(rng, width) for _ in range(batch_size)])
        cases.append(
            Case(
                name=f"test_output_thd_generated_{i:02d}",
                clauses=("thd-lengths", "thd-qkv-format"),
                description=f"seeded random selected ids B={batch_size}, S={width}",
                function="convert_batch_output",
                inputs={"batch": {"document_ids": ids, "attention_document_ids": ids}},
                options={"output_format": "thd"},
            )
        )
    return cases


def case_output_thd_runs():
    ids = long([[1, 1, 2, 2, 2, 0, 0], [5] * 7, [1, 2, 3, 4, 5, 6, 0]])
    fill = [THD_PAD] * 5
    return [
        Case(
            name="test_output_thd_runs_in_stream_order",
            clauses=("thd-lengths", "thd-qkv-format"),
            description="runs of equal positive ids in stream order; padding joins the last run; unused slots hold "
            "the THD fill",
            function="convert_batch_output",
            inputs={"batch": {"attention_document_ids": ids}},
            options={"output_format": "thd"},
            expected={
                "seq_lens": long([[2, 3] + fill[:4], [7] + fill, [1] * 6]),
                "seq_lens_padded": long([[2, 5] + fill[:4], [7] + fill, [1] * 5 + [2]]),
                "qkv_format": "thd",
            },
        ),
        Case(
            name="test_output_unknown_format_one_token",
            clauses=("types-output-format",),
            description='output_format "bshd" on a one-token mapping raises ValueError naming the formats',
            function="convert_batch_output",
            inputs={"batch": {"attention_document_ids": long([[1]])}},
            options={"output_format": "bshd"},
            error=("ValueError", ("output_format", "batched", "thd", Value("bshd"))),
        ),
    ] + [
        Case(
            name=f"test_output_thd_rejects_{name}",
            clauses=("thd-errors", f"thd-errors.{item}"),
            description=f"THD lengths cannot express {name.replace('_', ' ')}: ValueError naming row {row}",
            function="convert_batch_output",
            inputs={"batch": {"attention_document_ids": long(bad)}},
            options={"output_format": "thd"},
            error=("ValueError", (row,)),
        )
        # (name, ids, the row named, the [thd-errors] item)
        for name, bad, row, item in (
            ("left_padding", [[0, 0, 1, 1, 1]], 0, 3),
            ("interior_exclusion", [[1, 1, 0, 1, 1]], 0, 3),
            ("an_id_that_reappears", [[1, 1, 1, 1], [1, 2, 1, 0]], 1, 4),
            ("an_empty_row", [[1, 1, 0], [0, 0, 0]], 1, 2),
            ("a_negative_id", [[1, 1, 1], [1, -1, 2]], 1, 1),
            # item 1 is checked per element: a negative id in the first and in the last column of a row
            ("a_negative_id_first_column", [[1, 1, 1], [-1, 2, 2]], 1, 1),
            ("a_negative_id_last_column", [[1, 1, 1], [1, 2, -1]], 1, 1),
        )
    ]
