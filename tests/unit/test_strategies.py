"""The suite's hypothesis strategies (``conformance/helpers/strategies.py``) draw in-contract inputs
and cover the boundary kinds their docstrings claim.

Each test draws a few hundred examples under a fixed seed (``derandomize=True``, no example
database), checks every example against the contract the strategy promises, and then checks
that each claimed kind occurred at least once. Kinds a docstring calls rare (``packed_rows``'
unpacked-record forms) or only possible (``document_lengths``' split into 1-token documents of
a long total) are searched for with ``hypothesis.find`` instead.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from _draws import EXAMPLES, can_draw, draw_many, missing

from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.sample_batches import Contract, Row, row_positions

# --- document_lengths ------------------------------------------------------------------------


@pytest.mark.parametrize("total", [None, 1, 2, 7, cs.MAX_LEN])
def test_document_lengths_split_the_total_into_positive_lengths(total):
    kinds: Counter = Counter()
    for lengths in draw_many(cs.document_lengths(total), 200):
        assert lengths and all(n >= 1 for n in lengths), lengths
        if total is not None:
            assert sum(lengths) == total, lengths
        else:
            assert 1 <= sum(lengths) <= cs.MAX_LEN, lengths
        kinds["one document"] += len(lengths) == 1
        kinds["several documents"] += len(lengths) > 1
        kinds["a 1-token document among several"] += len(lengths) > 1 and 1 in lengths
        kinds["mixed lengths"] += len(set(lengths)) > 1
        kinds[f"total {sum(lengths)}"] += 1
    if total == 1:
        claimed = ["one document"]
    elif total == 2:
        claimed = ["one document", "several documents"]
    elif total is None:
        claimed = ["one document", "several documents", "mixed lengths", "total 1", f"total {cs.MAX_LEN}"]
    else:
        claimed = ["one document", "several documents", "a 1-token document among several", "mixed lengths"]
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"


@pytest.mark.parametrize("total", [2, 7, cs.MAX_LEN])
def test_document_lengths_can_split_into_1_token_documents(total):
    """ "from one document of total tokens to total 1-token documents" (for a long total the
    latter is rare: 200 fixed-seed draws of total 33 hold none)."""
    can_draw(cs.document_lengths(total), lambda lengths: lengths == [1] * total)


# --- packed_rows / packed_batches --------------------------------------------------------------


def check_row(row: Row, length: int) -> Counter:
    """Assert ``row`` is what ``pack_flat`` emits for an unshifted row of ``length`` tokens (or
    the rare unpacked-record forms ``packed_rows`` claims) and return its kinds."""
    kinds: Counter = Counter()
    described = f"row {row}"
    assert isinstance(row, Row), described
    assert len(row.tokens) == length, described
    assert all(0 <= t <= cs.MAX_TOKEN_ID or t in cs.EDGE_TOKEN_IDS for t in row.tokens), described
    padding = row.padding_length
    if padding is None:
        # "when there is no padding, with padding_length=None"
        assert row.positions is not None, f"{described}: only one of the two fields is left out"
        kinds["no padding_length"] += 1
        padding = 0
    assert 0 <= padding <= length - 1, f"{described}: padding_length outside [0, L-1]"
    real = length - padding
    assert all(t == cs.PAD_TOKEN_ID for t in row.tokens[real:]), f"{described}: the pad tail holds pad ids"
    if row.positions is None:
        kinds["no positions"] += 1
    else:
        assert len(row.positions) == length, described
    positions = row_positions(row)
    # positions start at 0, restart at 0 for every document, count up by one inside one
    assert positions[0] == 0, f"{described}: positions start at 0"
    assert all(p == 0 or p == q + 1 for q, p in zip(positions[:real], positions[1:real])), described
    assert positions[real:] == tuple(range(padding)), f"{described}: the pad tail is numbered 0..n-1"
    starts = [k for k in range(real) if positions[k] == 0]
    bounds = [*starts, real]
    documents = [bounds[k + 1] - bounds[k] for k in range(len(starts))]
    kinds["no padding"] += padding == 0
    kinds["padding"] += padding > 0
    kinds["one real token"] += real == 1
    kinds["one document over the real tokens"] += len(documents) == 1 and real > 1
    kinds["several documents"] += len(documents) > 1
    kinds["a 1-token document among several"] += len(documents) > 1 and 1 in documents
    kinds["every document 1 token"] += len(documents) > 1 and set(documents) == {1}
    kinds["real token equal to the pad id"] += cs.PAD_TOKEN_ID in row.tokens[:real]
    kinds["real token equal to an ignore_index"] += any(t in cs.IGNORE_INDICES for t in row.tokens[:real] if t)
    kinds["pack_flat form"] += row.positions is not None and row.padding_length is not None
    kinds["a token at the int64 edge"] += any(t in (2**63 - 1, -(2**63)) for t in row.tokens[:real])
    kinds["a token beyond int32"] += any(abs(t) >= 2**31 for t in row.tokens[:real])
    kinds["a document that ends the row"] += padding == 0 and len(documents) > 1
    return kinds


ROW_KINDS = [  # drawn within a few hundred rows
    "no padding",
    "padding",
    "one real token",
    "one document over the real tokens",
    "several documents",
    "a 1-token document among several",
    "every document 1 token",
    "real token equal to the pad id",
    "real token equal to an ignore_index",
    "pack_flat form",
    "a token at the int64 edge",
    "a token beyond int32",
    "a document that ends the row",
]


@pytest.mark.parametrize("length", [2, 9, cs.MAX_LEN])
def test_packed_rows_are_pack_flat_rows_of_the_length(length):
    kinds: Counter = Counter()
    for row in draw_many(cs.packed_rows(length)):
        kinds += check_row(row, length)
    claimed = list(ROW_KINDS)
    if length == 2:  # one real token and one pad, or two real tokens
        claimed.remove("a 1-token document among several")
        claimed.remove("real token equal to an ignore_index")  # 7 is rarely drawn in 2 tokens
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"


@pytest.mark.parametrize("length", [2, 9])  # rarer still for long rows (padding 0 is rarer)
def test_packed_rows_rarely_take_the_unpacked_record_forms(length):
    """ "Rarely the row is written as an unpacked record would be: without positions ... or,
    when there is no padding, with padding_length=None" (about 1 row in 20, and 1 in 150)."""
    can_draw(cs.packed_rows(length), lambda row: row.positions is None and row.padding_length is not None)
    can_draw(cs.packed_rows(length), lambda row: row.padding_length is None)


def documents_of(row: Row) -> int:
    """How many subdocuments the real tokens of ``row`` hold (positions restart at 0)."""
    real = len(row.tokens) - (row.padding_length or 0)
    return sum(1 for p in row_positions(row)[:real] if p == 0)


@pytest.mark.parametrize("length", [131, 258, cs.MANY_LEN])
def test_many_subdocument_rows_hold_more_than_127_documents(length):
    kinds: Counter = Counter()
    for row in draw_many(cs.many_subdocument_rows(length), 100):
        kinds += check_row(row, length)
        documents = documents_of(row)
        assert documents >= 128, f"{documents} documents in {row}"
        assert (row.padding_length or 0) <= 3, row
        kinds["more than 255 documents"] += documents > 255
        kinds["a 2-token document"] += documents < length - (row.padding_length or 0)
        kinds[f"{documents} documents"] += 1
    claimed = ["no padding", "padding", "every document 1 token", "a 2-token document", "128 documents"]
    if length >= 258:
        claimed.append("more than 255 documents")
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"


def test_packed_batches_have_one_length_and_in_contract_options():
    kinds: Counter = Counter()
    for drawn in draw_many(cs.packed_batches()):
        assert isinstance(drawn, cs.PackedBatch)
        assert 1 <= len(drawn.rows) <= cs.MAX_BATCH, drawn
        lengths = {len(row.tokens) for row in drawn.rows}
        assert len(lengths) == 1, f"rows of lengths {lengths} in one batch"
        (length,) = lengths
        if length > cs.MAX_LEN:  # "about one batch in MANY_ODDS is a many subdocuments batch"
            assert 131 <= length <= cs.MANY_LEN and len(drawn.rows) <= 2, drawn
            assert documents_of(drawn.rows[0]) >= 128, drawn.rows[0]
            kinds["many subdocuments"] += 1
        assert 2 <= length <= cs.MANY_LEN, drawn
        row_kinds = Counter()
        for row in drawn.rows:
            row_kinds += check_row(row, length)
        kinds += row_kinds
        assert drawn.ignore_index in cs.IGNORE_INDICES
        assert isinstance(drawn.mask_segment_starts, bool)
        assert isinstance(drawn.contract, Contract)
        assert drawn.contract.packed_mask_type in ("block_causal", "document_ids")
        kinds[f"B={len(drawn.rows)}"] += 1
        kinds[f"L={length}"] += 1
        kinds[f"ignore_index={drawn.ignore_index}"] += 1
        kinds[f"mask_segment_starts={drawn.mask_segment_starts}"] += 1
        contract = drawn.contract
        kinds[f"{contract.packed_mask_type}, metadata={contract.return_packed_sequence_metadata}"] += 1
        kinds["rows with and without padding in one batch"] += bool(row_kinds["padding"] and row_kinds["no padding"])
    claimed = [
        *ROW_KINDS,
        "B=1",
        "B=5",
        "B=9",
        f"B={cs.MAX_BATCH}",
        "L=2",
        *(f"ignore_index={i}" for i in cs.IGNORE_INDICES),
        "mask_segment_starts=True",
        "mask_segment_starts=False",
        *(f"{t}, metadata={m}" for t in ("block_causal", "document_ids") for m in (True, False)),
        "rows with and without padding in one batch",
        "many subdocuments",
    ]
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"
    # drawn (above), but rare: the reference's xdoc step costs about 0.1 s per such row
    assert kinds["many subdocuments"] <= EXAMPLES / 8, dict(kinds)


def test_packed_batches_reach_the_longest_rows():
    """L in 2..MAX_LEN: the longest rows are drawn, if rarely (300 fixed-seed draws hold none)."""
    can_draw(cs.packed_batches(), lambda drawn: len(drawn.rows[0].tokens) == cs.MAX_LEN)


def test_contracts_draw_every_combination():
    drawn = {(c.packed_mask_type, c.return_packed_sequence_metadata) for c in draw_many(cs.contracts(), 100)}
    assert drawn == {(t, m) for t in ("block_causal", "document_ids") for m in (True, False)}


# --- id_masks ----------------------------------------------------------------------------------


# --- the three edge classes: a bound reached, unsigned payloads, a fault in any column ------------


def test_element_faults_place_each_rule_in_the_first_and_last_column():
    """``element_faults`` draws every per-element rule of [ctb-input-errors] (items 4, 6, 10) in
    the first and the last column of a row, and item 6 in a numpy uint64 array beyond int64."""
    kinds: Counter = Counter()
    for fault in draw_many(cs.element_faults(), 200):
        assert isinstance(fault, cs.ElementFault)
        row = fault.case.rows[fault.record]
        length = len(row.tokens)
        assert 0 <= fault.column < length, fault
        values = fault.values()
        assert len(values) == length and values[fault.column] == fault.value, fault
        others = [v for k, v in enumerate(values) if k != fault.column]
        assert all(isinstance(v, int) and not isinstance(v, bool) for v in others), f"one fault only: {fault}"
        if fault.item == 4:
            assert isinstance(fault.value, float) and fault.error is TypeError, fault
        elif fault.item == 6:
            assert not -(2**63) <= fault.value < 2**63 and fault.error is ValueError, fault
        else:
            assert fault.item == 10 and fault.field == "positions" and fault.value < 0, fault
        if fault.form == "numpy uint64":
            assert fault.payload_value().dtype.name == "uint64" and fault.value >= 2**63, fault
        place = "first" if fault.column == 0 else "last" if fault.column == length - 1 else "inner"
        kinds[f"item {fault.item} {fault.field} {place} column"] += 1
        kinds[f"item {fault.item} as {fault.form}"] += 1
        kinds[f"a fault in an {place} column" if place == "inner" else "at an edge"] += 1
        kinds[
            f"record {'first' if fault.record == 0 else 'last' if fault.record == len(fault.case.rows) - 1 else 'inner'}"
        ] += 1
    claimed = [
        f"item {item} {field} {place} column"
        for item, fields in ((4, ("input_ids", "positions")), (6, ("input_ids", "positions")), (10, ("positions",)))
        for field in fields
        for place in ("first", "last")
    ]
    claimed += [
        "a fault in an inner column",
        "item 6 as numpy uint64",
        "item 6 as list",
        "item 10 as numpy int64",
        "record first",
        "record last",
    ]
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"


def test_unsigned_edge_batches_hold_each_unsigned_dtype_at_its_largest_value():
    """``unsigned_edge_batches`` gives fields as numpy uint8 .. uint64 holding the dtype's largest
    value (uint64: int64's largest), in the first and the last column, every value in int64."""
    kinds: Counter = Counter()
    for drawn in draw_many(cs.unsigned_edge_batches(), 200):
        for (index, field), dtype in drawn.dtypes.items():
            row = drawn.case.rows[index]
            values = list(row.tokens if field == "input_ids" else row.positions)
            assert all(0 <= v <= min(int(np.iinfo(dtype).max), 2**63 - 1) for v in values), (values, dtype)
            edge = min(int(np.iinfo(dtype).max), 2**63 - 1)
            if field == "positions":
                assert values[0] == 0, values
            for column, value in enumerate(values):
                if value == edge:
                    place = "first" if column == 0 else "last" if column == len(values) - 1 else "inner"
                    kinds[f"{field} np.{np.dtype(dtype).name} at its edge in the {place} column"] += 1
    claimed = [
        f"input_ids np.{n} at its edge in the {p} column"
        for n in ("uint8", "uint16", "uint32", "uint64")
        for p in ("first", "last")
    ]
    claimed += [f"positions np.{n} at its edge in the last column" for n in ("uint8", "uint16", "uint32", "uint64")]
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"


@pytest.mark.parametrize(
    ("row", "largest"),
    [
        (Row((1, 2, 3, 4, 5, 6, 0), (0, 1, 2, 0, 1, 5, 0), 1), 8),  # golden jump record: [0,1,2,3,4,8]
        (Row((5, 6, 7, 0, 0), None, 2), 2),  # the pad tail is not translated
        (Row((1, 2, 3), (0, 0, 0), 0), 1),  # two 1-token inputs: 0, 1
        (Row((7, 8), (0, 0), 1), 0),  # one real input
    ],
)
def test_largest_translated_position_is_specs(row, largest):
    assert cs.largest_translated_position([row]) == largest


def test_xdoc_bounds_draw_the_bound_at_and_one_past_the_largest_translated_position():
    """``xdoc_bounds`` draws ``max_sequence_length`` equal to the largest translated position P
    (rejected) and P + 1 (accepted)."""
    rows = [Row((1, 2, 3, 4, 5, 6, 0), (0, 1, 2, 0, 1, 5, 0), 1)]
    drawn = set(draw_many(cs.xdoc_bounds(rows), 50))
    assert drawn == {(8, True), (9, False)}, drawn


def _inside_precondition(row: list[int]) -> bool:
    """[unpad-precondition]'s order: values >= 0, nonzero entries non-decreasing along the row."""
    nonzero = [v for v in row if v != 0]
    return min(row) >= 0 and all(a <= b for a, b in zip(nonzero, nonzero[1:]))


def test_block_masks_reach_past_one_gpu_block():
    """``block_masks`` draws each form its docstring claims: rows one past a block of
    ``GPU_BLOCKS`` (1025, 2049, 4097) with a span boundary exactly at a block edge (1023 | 1024)
    and a nonzero entry in column 1023, more than 1024 spans in one row and in two rows, more
    than 1024 rows, on the binary and the indexed route, every mask inside [unpad-precondition]'s
    order with a nonzero entry; ``describe_mask`` reads back as the same mask."""
    import torch

    kinds: Counter = Counter()
    for mask in draw_many(cs.block_masks(), 200):
        rows = mask.to(torch.int64).tolist()
        assert any(any(row) for row in rows), "no nonzero entry"
        assert all(_inside_precondition(row) for row in rows), rows
        back = eval(cs.describe_mask(mask), {"torch": torch})
        assert back.dtype == mask.dtype and torch.equal(back, mask)
        batch_size, length = mask.shape
        binary = mask.dtype == torch.bool or int(mask.max()) <= 1
        spans = sum(bool(any(row)) for row in rows) if binary else sum(len({v for v in row if v > 0}) for row in rows)
        kinds[f"S = {length}"] += 1
        kinds["binary" if binary else "indexed"] += 1
        kinds[str(mask.dtype)] += 1
        for edge in (1024, 2048, 4096):
            if length > edge and any(row[edge - 1] != row[edge] for row in rows):
                kinds[f"a boundary at {edge - 1} | {edge}"] += 1
        kinds["column 1023 nonzero in a row past 1024"] += length > 1024 and any(row[1023] for row in rows)
        kinds["more than 1024 spans in one row"] += spans > 1024 and batch_size == 1
        kinds["more than 1024 spans in two rows"] += spans > 1024 and batch_size == 2 and not binary
        kinds["more than 1024 rows"] += batch_size > 1024 and spans > 1024
    claimed = [f"S = {n}" for n in (1025, 2049, 4097)]
    claimed += ["binary", "indexed", "torch.bool", "torch.int64", "torch.int32", "torch.int16"]
    claimed += ["a boundary at 1023 | 1024", "a boundary at 2047 | 2048", "column 1023 nonzero in a row past 1024"]
    claimed += ["more than 1024 spans in one row", "more than 1024 spans in two rows", "more than 1024 rows"]
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"


def test_describe_mask_writes_runs():
    import torch

    mask = torch.tensor([[1, 1, 1, 2, 3, 4, 0], [1, 1, 1, 2, 3, 4, 0], [0, 0, 0, 0, 0, 0, 5]], dtype=torch.int16)
    assert cs.describe_mask(mask) == (
        "torch.tensor([[1] * 3 + list(range(2, 5)) + [0]] * 2 + [[0] * 6 + [5]], dtype=torch.int16)"
    )


def test_block_batches_start_a_document_or_the_pad_tail_at_a_gpu_block_edge():
    """``block_batches`` draws pack_flat rows of S = 1025, 2049 and 4097 in which a document
    starts exactly at input column 1024 (and 2048), or the pad tail does, with a metadata
    request; ``describe_long_rows`` reads back as the same rows."""
    kinds: Counter = Counter()
    for case in draw_many(cs.block_batches(), 200):
        assert case.contract.return_packed_sequence_metadata
        lengths = {len(row.tokens) for row in case.rows}
        assert len(lengths) == 1 and 1 <= len(case.rows) <= 2, case
        back = eval(cs.describe_long_rows(case.rows), {"Row": Row})
        assert [(tuple(r.tokens), r.positions and tuple(r.positions), r.padding_length) for r in back] == [
            (r.tokens, r.positions, r.padding_length) for r in case.rows
        ]
        sequence = lengths.pop() - 1
        kinds[f"S = {sequence}"] += 1
        for row in case.rows:
            positions = row_positions(row)
            first_pad = len(row.tokens) - (row.padding_length or 0)
            assert first_pad >= 1 and all(positions[i] == 0 for i in (0, first_pad) if i < len(row.tokens))
            for edge in (1024, 2048):
                if edge < sequence and edge < first_pad and positions[edge] == 0:
                    kinds[f"a document starts at column {edge}"] += 1
                if edge == first_pad:
                    kinds[f"the pad tail starts at column {edge}"] += 1
            kinds["no padding"] += first_pad == len(row.tokens)
    claimed = ["S = 1025", "S = 2049", "S = 4097", "no padding"]
    claimed += ["a document starts at column 1024", "a document starts at column 2048"]
    claimed += ["the pad tail starts at column 1024"]
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"
