"""Golden cases for SPEC.md's "Packed metadata": ``build_packed_sequence_metadata`` and
``get_unpad_data``.

Canon values are upstream nemo-automodel 0.7.0's, written by hand (Examples F, G, K and the
field reports F11-F13); generated cases are seeded random id masks whose expected values come
from the reference.
"""

from __future__ import annotations

import random

import torch

from batchspec.conformance.golden.api import Case, Shape, bools, int32, long

META = ("meta-indices", "meta-cu-seqlens", "meta-max-seqlen", "meta-return")
UNPAD = ("unpad-binary", "unpad-indexed", "unpad-outputs")


def _meta(name, mask, indices, cu, max_seqlen, description, clauses=META, source=None):
    return Case(
        name=f"test_meta_{name}",
        clauses=clauses,
        description=description,
        function="build_packed_sequence_metadata",
        inputs={"mask": mask},
        expected={"packed_token_indices": long(indices), "cu_seqlens": int32(cu), "max_seqlen": max_seqlen},
        keys=("packed_token_indices", "cu_seqlens", "max_seqlen"),
        source=source,
    )


def case_meta_example_f():
    return _meta(
        "example_f_ids",
        long([[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]]),
        [[0, 1, 2, 3, 4, 5, 6, -1], [0, 1, 2, 3, 4, 5, 6, 7]],
        [[0, 3, 5, 7], [0, 5, 8, -1]],
        5,
        "Example F: the metadata of Example A's ids",
    )


def case_meta_example_g():
    return _meta(
        "example_g_joined_ids",
        long([[1, 1, 1, 1, 1, 1, 1, 0], [1] * 8]),
        [[0, 1, 2, 3, 4, 5, 6, -1], list(range(8))],
        [[0, 7], [0, 8]],
        8,
        "Example G: joined (xdoc) ids give one sequence per row",
    )


def case_meta_example_k_empty_row():
    return _meta(
        "example_k_empty_row",
        long([[1, 2, 0], [0, 0, 0]]),
        [[0, 1, -1], [-1, -1, -1]],
        [[0, 1, 2], [0, -1, -1]],
        1,
        "Example K: an all-zero row beside a real one holds 0 then -1",
        META + ("meta-errors",),
    )


def case_meta_example_k_interior_exclusion():
    return _meta(
        "example_k_interior_exclusion",
        long([[1, 0, 1, 2]]),
        [[0, -1, 2, 3]],
        [[0, 2, 3]],
        2,
        "Example K: an interior zero does not split id 1's count",
    )


def case_meta_gapped_ids():
    return _meta(
        "gapped_ids",
        long([[1, 1, 3, 3]]),
        [[0, 1, 2, 3]],
        [[0, 2, 4, -1]],
        2,
        "gapped ids: width is the largest id + 1, trailing -1",
        META + ("unpad-precondition",),
    )


def case_meta_bool_mask():
    return _meta(
        "bool_mask",
        bools([[True, True, False], [True, False, True]]),
        [[0, 1, -1], [0, -1, 2]],
        [[0, 2], [0, 2]],
        2,
        "a bool mask is binary: one sequence per row",
        META + ("unpad-binary",),
    )


def case_meta_int32_ids():
    return _meta(
        "int32_ids",
        int32([[1, 2, 2]]),
        [[0, 1, 2]],
        [[0, 1, 3]],
        2,
        "int32 ids give int64 indices and int32 cu_seqlens (F13)",
    )


def case_meta_f11_one_empty_row():
    return _meta(
        "f11_one_empty_row",
        long([[1, 1, 1, 1], [0, 0, 0, 0]]),
        [[0, 1, 2, 3], [-1, -1, -1, -1]],
        [[0, 4], [0, -1]],
        4,
        "F11: upstream tolerates one empty row",
        META + ("meta-errors",),
        source="F11",
    )


def case_meta_f12_gapped_with_padding():
    return _meta(
        "f12_gapped_with_padding",
        long([[1, 1, 3, 3, 0]]),
        [[0, 1, 2, 3, -1]],
        [[0, 2, 4, -1]],
        2,
        "F12: gapped ids leave trailing -1, not zero-length entries",
        META + ("unpad-precondition",),
        source="F12",
    )


def case_meta_f13_dtypes():
    return [
        _meta(
            "f13_int32_mask",
            int32([[1, 1, 1, 2, 2]]),
            [[0, 1, 2, 3, 4]],
            [[0, 3, 5]],
            3,
            "F13: int32 mask, contract dtypes",
            META + ("unpad-binary",),
            source="F13",
        ),
        _meta(
            "f13_int64_mask",
            long([[1, 1, 1, 2, 2]]),
            [[0, 1, 2, 3, 4]],
            [[0, 3, 5]],
            3,
            "F13: int64 mask, contract dtypes",
            META + ("unpad-binary",),
            source="F13",
        ),
        _meta(
            "f13_bool_mask",
            bools([[True, True, True, True, False]]),
            [[0, 1, 2, 3, -1]],
            [[0, 4]],
            4,
            "F13: bool mask, contract dtypes",
            META + ("unpad-binary",),
            source="F13",
        ),
    ]


def _unpad(name, mask, indices, cu, max_seqlen, description):
    return Case(
        name=f"test_unpad_{name}",
        clauses=UNPAD,
        description=description,
        function="get_unpad_data",
        inputs={"mask": mask},
        expected={"indices": long(indices), "cu_seqlens": int32(cu), "max_seqlen": max_seqlen},
    )


def case_unpad_canon():
    return [
        _unpad(
            "example_f_flat",
            long([[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]]),
            [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15],
            [0, 3, 5, 7, 12, 15],
            5,
            "Example F flattened: (row, id) order",
        ),
        _unpad(
            "binary_int",
            long([[1, 1, 0], [0, 0, 0], [1, 0, 1]]),
            [0, 1, 6, 8],
            [0, 2, 4],
            2,
            "binary int mask: one sequence per non-empty row",
        ),
        _unpad(
            "binary_bool",
            bools([[True, False, True, True]]),
            [0, 2, 3],
            [0, 3],
            3,
            "bool mask: interior False does not split",
        ),
        _unpad(
            "id_order_not_stream_order",
            long([[2, 2, 1, 0]]),
            [0, 1, 2],
            [0, 1, 3],
            2,
            "indexed lengths are in id order, not stream order",
        ),
        _unpad(
            "interior_exclusion_indexed",
            long([[1, 0, 1, 2]]),
            [0, 2, 3],
            [0, 2, 3],
            2,
            "indexed mask with an interior exclusion",
        ),
    ]


def case_unordered_ids():
    """Ids outside the caller's order ([unpad-precondition]: nothing is checked, the rules still
    apply): an id split by another id, ids decreasing along the row. The spans are the indexed
    route's, so a wrong one is blamed on [unpad-indexed] / [meta-cu-seqlens] and on
    [unpad-precondition]."""
    cases = []
    for name, mask, indices, cu, max_seqlen, what in (
        ("split_id", [[1, 2, 1]], [0, 1, 2], [0, 2, 3], 2, "id 1 split by id 2"),
        ("decreasing_ids", [[2, 2, 1, 1, 1]], [0, 1, 2, 3, 4], [0, 3, 5], 3, "ids decreasing along the row"),
    ):
        cases.append(
            Case(
                name=f"test_unpad_{name}",
                clauses=("unpad-indexed", "unpad-precondition"),
                description=f"{what}: per (row, id) counts, exactly as [unpad-indexed] defines them, and no error",
                function="get_unpad_data",
                inputs={"mask": long(mask)},
                expected={"indices": long(indices), "cu_seqlens": int32(cu), "max_seqlen": max_seqlen},
            )
        )
        cases.append(
            Case(
                name=f"test_meta_{name}",
                clauses=("meta-cu-seqlens", "unpad-precondition"),
                description=f"{what}: row-local indices and per-id cu_seqlens, exactly as [meta-indices] and "
                "[meta-cu-seqlens] define them",
                function="build_packed_sequence_metadata",
                inputs={"mask": long(mask)},
                expected={
                    "packed_token_indices": long([indices]),
                    "cu_seqlens": int32([cu]),
                    "max_seqlen": max_seqlen,
                },
            )
        )
    return cases


# (name, mask, what is wrong, facts): each raises ValueError naming attention_mask, and the
# shape given when the mask is not 2-D.
BAD_MASKS = [
    ("1d", long([1, 1, 0]), "a mask that is not 2-D", ("attention_mask", Shape(3))),
    ("3d", long([[[1, 1]]]), "a mask that is not 2-D", ("attention_mask", Shape(1, 1, 2))),
    ("all_zero", long([[0, 0], [0, 0]]), "a mask without a valid token", ("attention_mask",)),
    ("empty", torch.zeros((0, 4), dtype=torch.int64), "a mask without a valid token", ("attention_mask",)),
    ("all_false", torch.zeros((2, 3), dtype=torch.bool), "a mask without a valid token", ("attention_mask",)),
]


def case_meta_errors():
    return [
        Case(
            name=f"test_meta_rejects_{n}",
            clauses=("meta-errors",),
            description=f"upstream's ValueError for {what}, naming attention_mask",
            function="build_packed_sequence_metadata",
            inputs={"mask": mask},
            error=("ValueError", facts),
        )
        for n, mask, what, facts in BAD_MASKS
    ]


def case_unpad_errors():
    return [
        Case(
            name=f"test_unpad_rejects_{n}",
            clauses=("unpad-errors",),
            description=f"upstream's ValueError for {what}, naming attention_mask",
            function="get_unpad_data",
            inputs={"mask": mask},
            error=("ValueError", facts),
        )
        for n, mask, what, facts in BAD_MASKS
    ]


def _random_ids(rng: random.Random, rows: int, width: int) -> torch.Tensor:
    """Row-local ids 1..k in contiguous runs, then a zero tail (the SPEC's precondition)."""
    out = []
    for _ in range(rows):
        real = rng.randint(1, width)
        row: list[int] = []
        doc = 0
        while len(row) < real:
            doc += 1
            row.extend([doc] * min(rng.randint(1, 4), real - len(row)))
        out.append(row + [0] * (width - real))
    return long(out)


def case_meta_generated():
    rng = random.Random(20260205)
    cases = []
    for i in range(16):
        rows, width = rng.choice([(1, 1), (1, 5), (2, 3), (3, 8), (4, 2), (2, 12)]), None
        rows, width = rows
        mask = _random_ids(rng, rows, width)
        cases.append(
            Case(
                name=f"test_meta_generated_{i:02d}",
                clauses=META,
                description=f"seeded random ids [{rows}, {width}]",
                function="build_packed_sequence_metadata",
                inputs={"mask": mask},
            )
        )
    return cases


def case_unpad_generated():
    rng = random.Random(20260206)
    cases = []
    for i in range(10):
        rows, width = rng.choice([(1, 1), (1, 6), (2, 4), (3, 7)])
        mask = _random_ids(rng, rows, width)
        if i % 3 == 0:
            mask = mask > 0
        cases.append(
            Case(
                name=f"test_unpad_generated_{i:02d}",
                clauses=UNPAD,
                description=f"seeded random {'bool' if i % 3 == 0 else 'id'} mask [{rows}, {width}]",
                function="get_unpad_data",
                inputs={"mask": mask},
            )
        )
    return cases


def case_negative_entries():
    """Masks with negative entries: outside the caller's precondition, and still exactly what
    the clauses define [unpad-precondition]. A negative entry is nonzero: it is in ``indices``
    and ``packed_token_indices``, and counts in a binary row's span; on the indexed route only
    ids 1..max are spans. ``get_unpad_data`` takes one route for the whole mask it gets,
    ``build_packed_sequence_metadata`` one per row [meta-cu-seqlens]: the same mask below gives
    ``cu_seqlens [0,1,3,5]`` (indexed, row 1 counts its two 1s) from the one and row 1
    ``[0,3,-1]`` (binary, the -5 counts) from the other."""
    mixed = long([[1, -1, 2, 2], [-5, 1, 1, 0], [-1, -1, 0, 0]])
    unpad_clauses = ("unpad-outputs", "unpad-precondition")
    return [
        Case(
            name="test_unpad_negative_entries_binary",
            clauses=("unpad-binary", *unpad_clauses),
            description="largest value 1: binary, each row's span counts its negative entries",
            function="get_unpad_data",
            inputs={"mask": long([[1, -1, 0, 1], [0, 0, -2, 0]])},
            expected={"indices": long([0, 1, 3, 6]), "cu_seqlens": int32([0, 3, 4]), "max_seqlen": 3},
        ),
        Case(
            name="test_unpad_negative_entries_only",
            clauses=("unpad-binary", *unpad_clauses),
            description="only zeros and negative values: largest value 0, binary, one span of 2",
            function="get_unpad_data",
            inputs={"mask": long([[-1, 0, -1]])},
            expected={"indices": long([0, 2]), "cu_seqlens": int32([0, 2]), "max_seqlen": 2},
        ),
        Case(
            name="test_unpad_negative_entries_indexed",
            clauses=("unpad-indexed", *unpad_clauses),
            description="largest value 2: indexed, negative entries in indices but in no span",
            function="get_unpad_data",
            inputs={"mask": long([[1, -1, 2, 2], [-5, 0, 0, 0]])},
            expected={"indices": long([0, 1, 2, 3, 4]), "cu_seqlens": int32([0, 1, 3]), "max_seqlen": 2},
        ),
        Case(
            name="test_unpad_mixed_rows_one_route",
            clauses=("unpad-indexed", *unpad_clauses),
            description="a binary-looking row beside an indexed one: the whole mask is indexed (largest value 2)",
            function="get_unpad_data",
            inputs={"mask": mixed},
            expected={
                "indices": long([0, 1, 2, 3, 4, 5, 6, 8, 9]),
                "cu_seqlens": int32([0, 1, 3, 5]),
                "max_seqlen": 2,
            },
        ),
        _meta(
            "negative_entries_route_per_row",
            mixed,
            [[0, 1, 2, 3], [0, 1, 2, -1], [0, 1, -1, -1]],
            [[0, 1, 3], [0, 3, -1], [0, 2, -1]],
            3,
            "each row takes its own route: row 0 indexed, rows 1 and 2 (largest value <= 1) binary, -1s counted",
            META + ("unpad-binary", "unpad-precondition"),
        ),
    ]


def case_narrowing_edges():
    """Ids where an id narrowed to int8 (127 | 128), uint8 (255 | 256) or int16 (32767 | 32768)
    wraps, gapped as [unpad-precondition] allows, and a row of more spans than int16 counts;
    expected values from the reference."""
    edges = long([[1, 127, 128, 128, 129, 255, 256, 256, 0], [2, 32767, 32768, 32769, 32769, 0, 0, 0, 0]])
    return [
        Case(
            name="test_unpad_ids_at_narrowing_edges",
            clauses=(*UNPAD, "unpad-precondition"),
            description="gapped ids 127 | 128, 255 | 256 and 32767 | 32768 in one mask (indexed, (row, id) order)",
            function="get_unpad_data",
            inputs={"mask": edges},
        ),
        Case(
            name="test_meta_ids_at_int8_edges",
            clauses=(*META, "unpad-precondition"),
            description="gapped ids 126..129 and 254..257: cu_seqlens [2, 258], mostly -1",
            function="build_packed_sequence_metadata",
            inputs={"mask": long([[1, 126, 127, 128, 129, 0], [254, 255, 256, 257, 257, 0]])},
        ),
        Case(
            name="test_meta_beyond_int16_ids",
            clauses=META,
            description="one row of 32770 one-token ids 1..32770 (int32): 32770 spans, past int16's 32767",
            function="build_packed_sequence_metadata",
            inputs={"mask": int32([list(range(1, 32771))])},
        ),
    ]


def _runs(*runs: tuple[int, int]) -> list[int]:
    """A row written as ``(value, count)`` runs."""
    return [value for value, count in runs for _ in range(count)]


def case_past_one_gpu_block():
    """Masks a kernel covers with more than one block of 1024 (the block most GPU kernels of
    this kind take; issue 33): rows one past a block with a span or padding boundary exactly at
    the block edge (column 1023 | 1024, 2047 | 2048), more than 1024 spans in one row (a per-span
    scan needs a second block), and more than 1024 rows of one span each. Inside
    [unpad-precondition]'s order; int16 and bool masks (spans and ids fit int16) to keep the
    store small; expected values from the reference."""
    edge_ids = torch.tensor(
        [
            _runs((1, 1024), (2, 1)),  # S = 1025: id 2 is the only token of the second block
            _runs((1, 1023), (0, 1), (2, 1)),  # column 1023 excluded, the next block starts id 2
        ],
        dtype=torch.int16,
    )
    long_bool = torch.tensor(
        [_runs((1, 2048), (0, 2048), (1, 1)), _runs((0, 1023), (1, 2), (0, 3072))], dtype=torch.int16
    ).bool()  # S = 4097: tokens at 0..2047 and 4096 / only at the edge 1023 | 1024
    many_spans = torch.tensor([[*range(1, 1026), 1025, 0]], dtype=torch.int16)  # 1025 spans, the last two tokens
    many_rows = torch.ones((1026, 2), dtype=torch.bool)
    many_rows[3] = False  # one empty row: 1025 spans, one per non-empty row
    return [
        Case(
            name="test_unpad_ids_at_a_gpu_block_edge",
            clauses=UNPAD,
            description="int16 ids [2, 1025]: span boundaries at column 1023 | 1024 (indexed, (row, id) order)",
            function="get_unpad_data",
            inputs={"mask": edge_ids},
        ),
        Case(
            name="test_unpad_bool_rows_past_four_gpu_blocks",
            clauses=UNPAD,
            description="bool [2, 4097]: padding from the edge 2047 | 2048 and one token past 4096; a span only at 1023 | 1024",
            function="get_unpad_data",
            inputs={"mask": long_bool},
        ),
        Case(
            name="test_unpad_spans_past_one_gpu_block",
            clauses=UNPAD,
            description="int16 [1, 1027]: ids 1..1025, 1025 spans (cu_seqlens of 1026: a scan over two blocks of 1024)",
            function="get_unpad_data",
            inputs={"mask": many_spans},
        ),
        Case(
            name="test_unpad_rows_past_one_gpu_block",
            clauses=UNPAD,
            description="bool [1026, 2] with one empty row: 1025 binary spans, one per non-empty row",
            function="get_unpad_data",
            inputs={"mask": many_rows},
        ),
        Case(
            name="test_meta_ids_at_a_gpu_block_edge",
            clauses=META,
            description="int16 ids [2, 1025]: span boundaries at column 1023 | 1024, row-local",
            function="build_packed_sequence_metadata",
            inputs={"mask": edge_ids},
        ),
        Case(
            name="test_meta_spans_past_one_gpu_block",
            clauses=META,
            description="int16 [1, 1027]: ids 1..1025, cu_seqlens [1, 1026] (wider than one block of 1024)",
            function="build_packed_sequence_metadata",
            inputs={"mask": many_spans},
        ),
    ]
