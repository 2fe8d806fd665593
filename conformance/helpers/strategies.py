"""Hypothesis strategies for the conformance suite: packed rows, packed batches, id masks.

Every strategy builds inputs the way Zephon 0.2.0 emits them (``batchspec.conformance.helpers.sample_batches``) and
never asserts. Sizes are capped by module constants that environment variables override:

* ``BATCHSPEC_MAX_BATCH`` (default 16): the most rows in a drawn batch or mask (a backend
  that mishandles row 5 or row 9 must meet such a batch);
* ``BATCHSPEC_MAX_LEN`` (default 33): the longest unshifted row L (so S = L - 1 <= 32), and
  the longest ``[B, S]`` id mask;
* ``BATCHSPEC_MANY_LEN`` (default 260): the longest row of the rare *many subdocuments*
  batches and masks.

The caps are small on purpose: the reference is written as plain loops (its xdoc step is
O(S * documents) Python per row), and every example runs it at least once. Shrinking makes the
small cases the ones that are reported, so larger caps find few extra bugs. The one exception
is the subdocument count: a backend that narrows ids to int8 or int16 wraps at 128 or 32768
ids, which a row of 32 tokens never reaches. So about one batch in ``MANY_ODDS`` (and one id
mask in 16) is a *many subdocuments* one: B <= 2 rows of L in 131..MANY_LEN, mostly 1-token
documents, more than 127 (sometimes more than 255) in a row; id masks and attention ids also jump
to ids at the narrowing edges (``NARROW_EDGE_IDS``, rarely ``INT16_EDGE_IDS``). Rows of more
than 32767 subdocuments are too slow for the reference on every example: a fixed test and a
golden case hold them.

The second exception is ``block_masks`` (issue 33), drawn by its own properties: masks that a
GPU kernel covers with more than one block (rows of 1025 .. 4097 columns with a boundary at a
block edge, more than 1024 spans or rows). Its draws stay small (a few runs per row), and the
masks cost the reference and the plain-Python oracles milliseconds.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import torch
from hypothesis import strategies as st

from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.sample_batches import (
    TOKEN_FIELDS,
    Contract,
    Row,
    describe_rows,
    packed_row,
    row_positions,
)

__all__ = [
    "BEYOND_INT64",
    "BLOCK_MASK_FORMS",
    "BLOCK_ROW_LENGTHS",
    "BLOCK_SPAN_COUNTS",
    "ElementFault",
    "IGNORE_INDICES",
    "INT16_EDGE_IDS",
    "MANY_LEN",
    "MANY_ODDS",
    "MAX_BATCH",
    "MAX_LEN",
    "NARROW_EDGE_IDS",
    "NEGATIVE_MASK_VALUES",
    "EDGE_TOKEN_IDS",
    "GPU_BLOCKS",
    "MAX_TOKEN_ID",
    "PAD_TOKEN_ID",
    "PackedBatch",
    "UNSIGNED_DTYPES",
    "UnsignedBatch",
    "Route",
    "block_batches",
    "block_masks",
    "call_arguments",
    "contracts",
    "describe_call",
    "describe_long_rows",
    "describe_mask",
    "describe_route_call",
    "draw_format",
    "draw_route",
    "draw_token_fields",
    "draw_xdoc",
    "element_faults",
    "fault_columns",
    "document_lengths",
    "id_masks",
    "many_subdocument_rows",
    "packed_batches",
    "packed_rows",
    "unsigned_edge_batches",
    "xdoc_bounds",
    "usable_contract",
]

MAX_BATCH: int = int(os.environ.get("BATCHSPEC_MAX_BATCH", "16"))
MAX_LEN: int = int(os.environ.get("BATCHSPEC_MAX_LEN", "33"))
# Token ids 0..50: small enough that real tokens often equal the pad id (0) and the
# ignore_index values 0 and 7 below, which is where "by position, never by value" matters.
MAX_TOKEN_ID: int = 50
# Token ids at the edges of int64 [ctb-input-errors] allows (a token is any int64): a backend
# that narrows tokens to int32, or overflows on them, must meet them. Drawn rarely.
EDGE_TOKEN_IDS: tuple[int, ...] = (2**31, 2**32 + 5, 2**63 - 1, -(2**63))
PAD_TOKEN_ID: int = 0
# [ctb-ignore-index] any int: upstream's -100, common alternatives, and values that are also
# real token ids (0, 7) so that a masked label and a kept label can hold the same value.
IGNORE_INDICES: tuple[int, ...] = (IGNORE_INDEX, -1, 0, 7, -7, 99999)

MANY_LEN: int = int(os.environ.get("BATCHSPEC_MANY_LEN", "260"))
# one packed batch in about MANY_ODDS is a many-subdocuments batch (the reference's xdoc step
# costs about 0.1 s per such row, so they stay rare)
MANY_ODDS: int = 40
# Ids where an id narrowed to a smaller integer wraps: int8 at 127 | 128, uint8 at 255 | 256.
NARROW_EDGE_IDS: tuple[int, ...] = (127, 128, 129, 255, 256, 257)
# int16 at 32767 | 32768 (the reference loops over every id 1..max: drawn rarely, one row).
INT16_EDGE_IDS: tuple[int, ...] = (32767, 32768, 32769)
# [unpad-precondition] values < 0 are outside the caller's precondition, and still defined: -1
# (a common "excluded" marker), small ones, those one past the int8 / int16 minimum, and the
# dtype's minimum (``None`` here; -2**31 for int32, -2**63 for int64).
NEGATIVE_MASK_VALUES: tuple[int | None, ...] = (-1, -1, -1, -2, -128, -129, -32768, -32769, None)

assert MAX_BATCH >= 1 and MAX_LEN >= 2, "BATCHSPEC_MAX_BATCH >= 1 and BATCHSPEC_MAX_LEN >= 2"  # sanity check
assert MANY_LEN >= 150, "BATCHSPEC_MANY_LEN >= 150 (a many-subdocuments row holds more than 127 ids)"  # sanity check


class PackedBatch(NamedTuple):
    """One drawn ``convert_text_batch`` input: rows plus the call's options."""

    rows: list[Row]
    ignore_index: int
    mask_segment_starts: bool
    contract: Contract


@st.composite
def document_lengths(draw: st.DrawFn, total: int | None = None) -> list[int]:
    """Positive document lengths summing to ``total`` (drawn in 1..MAX_LEN when ``None``).

    Any split is possible, from one document of ``total`` tokens to ``total`` 1-token
    documents: the cut points are a random subset of 1..total-1.
    """
    if total is None:
        total = draw(st.integers(1, MAX_LEN), label="total")
    cuts = sorted(draw(st.sets(st.integers(1, total - 1), max_size=total - 1)) if total > 1 else [])
    bounds = [0, *cuts, total]
    return [bounds[k + 1] - bounds[k] for k in range(len(bounds) - 1)]


@st.composite
def packed_rows(draw: st.DrawFn, length: int) -> Row:
    """One unshifted packed row of exactly ``length`` (>= 2) tokens, as ``pack_flat`` emits it.

    ``padding`` is 0..length-1 trailing pad tokens (at least one real token remains; both
    edges are drawn often); the
    real tokens are split into documents by ``document_lengths`` and hold ids 0..MAX_TOKEN_ID,
    so a real token may equal the pad id, and rarely one of ``EDGE_TOKEN_IDS``. Rarely the row is written as an unpacked record
    would be: without ``positions`` (one document: positions 0..L-n-1, then the pad tail's
    0..n-1 [ctb-positions]) or, when there is no padding, with ``padding_length=None`` (D-2).
    """
    assert length >= 2  # sanity check
    # any padding [ctb-input-errors] item 12 allows, its two edges often: none (a document ends
    # the row) and L - 1 (one real token)
    padding = draw(st.one_of(st.integers(0, length - 1), st.sampled_from((0, length - 1))), label="padding")
    lengths = draw(document_lengths(length - padding), label="document_lengths")
    tokens = st.integers(0, MAX_TOKEN_ID)
    if draw(st.integers(0, 9), label="edge_tokens") == 0:  # one row in ten holds int64-edge ids
        tokens = st.one_of(tokens, st.sampled_from(EDGE_TOKEN_IDS))
    documents = [draw(st.lists(tokens, min_size=n, max_size=n)) for n in lengths]
    row = packed_row(documents, padding, pad_token_id=PAD_TOKEN_ID)
    form = draw(st.sampled_from(("pack_flat",) * 8 + ("no_positions", "no_padding_length")), label="form")
    if form == "no_positions":
        return Row(row.tokens, None, row.padding_length)
    if form == "no_padding_length" and padding == 0:
        return Row(row.tokens, row.positions, None)
    return row


def contracts() -> st.SearchStrategy[Contract]:
    """A test-built contract with either mask type and either metadata request."""
    return st.builds(
        Contract,
        packed_mask_type=st.sampled_from(("block_causal", "document_ids")),
        return_packed_sequence_metadata=st.booleans(),
    )


@st.composite
def many_subdocument_rows(draw: st.DrawFn, length: int) -> Row:
    """One unshifted packed row of ``length`` (>= 131) tokens that holds many subdocuments, as
    ``pack_flat`` emits it: 0..3 trailing pad tokens, and the real tokens split into D
    documents of mostly one token, D in 128..(real tokens), often exactly one of
    ``NARROW_EDGE_IDS`` (128 and up) or every real token its own document. Token ids
    0..MAX_TOKEN_ID."""
    assert length >= 131  # sanity check
    padding = draw(st.sampled_from((0, 0, 1, 3)), label="padding")
    real = length - padding
    edges = [d for d in NARROW_EDGE_IDS if 128 <= d <= real]
    count = draw(st.one_of(st.sampled_from([*edges, real]), st.integers(128, real)), label="documents")
    starts = sorted([0, *draw(st.permutations(range(1, real)), label="starts")[: count - 1]])
    tokens = draw(st.lists(st.integers(0, MAX_TOKEN_ID), min_size=real, max_size=real), label="tokens")
    bounds = [*starts, real]
    return packed_row([tokens[bounds[k] : bounds[k + 1]] for k in range(count)], padding, pad_token_id=PAD_TOKEN_ID)


@st.composite
def packed_batches(draw: st.DrawFn) -> PackedBatch:
    """B in 1..MAX_BATCH packed rows of one unshifted length L in 2..MAX_LEN, and options.

    About one batch in ``MANY_ODDS`` is a *many subdocuments* batch instead: one row (two in
    one such batch in three) of L in 131..MANY_LEN, the first a ``many_subdocument_rows`` row
    (more than 127 subdocuments, sometimes more than 255), the second another such row or a
    ``packed_rows`` row of the same L.
    """
    if draw(st.integers(0, MANY_ODDS - 1), label="many_subdocuments") == 0:
        edges = sorted({131, min(258, MANY_LEN), MANY_LEN})  # 258: room for 256 one-token documents
        length = draw(st.one_of(st.integers(131, MANY_LEN), st.sampled_from(edges)), label="L")
        rows = [draw(many_subdocument_rows(length), label="row 0")]
        if draw(st.sampled_from((1, 1, 2)), label="B") == 2:
            rows.append(draw(st.one_of(many_subdocument_rows(length), packed_rows(length)), label="row 1"))
    else:
        length = draw(st.integers(2, MAX_LEN), label="L")
        rows = draw(st.lists(packed_rows(length), min_size=1, max_size=MAX_BATCH), label="rows")
    return PackedBatch(
        rows=rows,
        ignore_index=draw(st.sampled_from(IGNORE_INDICES), label="ignore_index"),
        mask_segment_starts=draw(st.booleans(), label="mask_segment_starts"),
        contract=draw(contracts(), label="contract"),
    )


@st.composite
def _id_row(
    draw: st.DrawFn,
    sequence_length: int,
    max_documents: int,
    gapped: bool,
    edges: tuple[int, ...] = (),
    kinds: tuple[str, ...] = ("zero", "same", "new"),
) -> list[int]:
    """One row of 1-based ids, non-decreasing along the row, with zeros anywhere.

    Walking along the row each slot is a kind of ``kinds``: ``zero`` (id 0), ``same`` (the
    current id, or the first id when none started yet) or ``new`` (the next id). ``gapped``
    lets a new id skip one (the first id may then be 2). With ``edges``, a new id jumps now and
    then to one of them or up to two below it (``[1, 126, 127, 128]``), never backwards. At most
    ``max_documents`` ids start; further ``new`` slots continue the last id.
    """
    slots = draw(st.lists(st.sampled_from(kinds), min_size=sequence_length, max_size=sequence_length))
    row, current, started = [], 0, 0
    for kind in slots:
        if kind == "zero":
            row.append(0)
            continue
        if current == 0 or (kind == "new" and started < max_documents):
            step = draw(st.sampled_from((1, 2))) if gapped else 1
            if edges and draw(st.integers(0, 2), label="jump") == 0:
                target = draw(st.sampled_from(edges)) - draw(st.integers(0, 2))
                current = max(current + step, target)
            else:
                current += step
            started += 1
        row.append(current)
    return row


def _negative(draw: st.DrawFn, dtype: torch.dtype) -> int:
    """One of ``NEGATIVE_MASK_VALUES``, ``None`` read as the dtype's minimum."""
    value = draw(st.sampled_from(NEGATIVE_MASK_VALUES), label="negative")
    return torch.iinfo(dtype).min if value is None else value


@st.composite
def _with_negatives(draw: st.DrawFn, rows: list[list[int]], dtype: torch.dtype) -> list[list[int]]:
    """``rows`` with negative entries: each row keeps its values, gets up to 3 entries (ids or
    zeros) replaced by negative ones, or (``only``) every nonzero entry replaced, so the row
    holds only zeros and negative values."""
    out = []
    for b, row in enumerate(rows):
        how = draw(st.sampled_from(("keep", "some", "some", "only")), label=f"negatives[{b}]")
        row = list(row)
        if how == "some":
            for i in draw(st.sets(st.integers(0, len(row) - 1), min_size=1, max_size=min(3, len(row)))):
                row[i] = _negative(draw, dtype)
        elif how == "only":
            row = [_negative(draw, dtype) if v else 0 for v in row]
        out.append(row)
    return out


# The forms of ``id_masks`` and their weights (out of 16).
MASK_FORMS: tuple[str, ...] = ("ids",) * 13 + ("edge ids",) * 2 + ("many ids",)


@st.composite
def id_masks(draw: st.DrawFn) -> torch.Tensor:
    """A ``[B, S]`` mask for the metadata builders, with at least one nonzero entry.

    Three forms (``MASK_FORMS``):

    * ``ids`` (13 in 16): B in 1..MAX_BATCH, S in 1..MAX_LEN. Integer masks (int64, sometimes
      int32) hold 1-based row-local ids that increase along the row, each id one run that
      interior zeros may interrupt (as SPEC Example K's ``[1,0,1,2]``). One mask in three
      holds only 0/1 (the binary route); otherwise ids are sometimes gapped (``[1,1,3,3]``,
      ``[2,2,0]``), and in half of those masks each row draws its own id count, so that
      binary rows (largest value <= 1) sit beside indexed ones. Bool masks (one in five) are
      arbitrary.
    * ``edge ids`` (2 in 16): int64 or int32, B in 1..4, S in 2..MAX_LEN, ids that jump to
      the narrowing edges ``NARROW_EDGE_IDS`` (127 | 128, 255 | 256) or, in one such mask in
      eight (then B = 1), ``INT16_EDGE_IDS`` (32767 | 32768).
    * ``many ids`` (1 in 16): int64 or int32, B in 1..2, S in 150..MANY_LEN, ids 1, 2, ...
      of mostly one token each: more than 127 spans in a row.

    An integer mask of any form holds negative entries in about one case in two
    (``_with_negatives``: a few per row, or a row of only zeros and negative values; values
    from ``NEGATIVE_MASK_VALUES``): outside the caller's precondition, and still defined
    [unpad-precondition]. Rows may be empty; when every row is, one entry is set.
    """
    form = draw(st.sampled_from(MASK_FORMS), label="form")
    edges: tuple[int, ...] = ()
    kinds: tuple[str, ...] = ("zero", "same", "new")
    layout = "shared"
    if form == "ids":
        batch_size = draw(st.integers(1, MAX_BATCH), label="B")
        sequence_length = draw(st.integers(1, MAX_LEN), label="S")
        dtype = draw(st.sampled_from((torch.int64, torch.int64, torch.int64, torch.int32, torch.bool)), label="dtype")
        layout = draw(st.sampled_from(("binary", "shared", "per row")), label="layout")
    elif form == "edge ids":
        wide = draw(st.integers(0, 7), label="int16 edges") == 0
        edges = INT16_EDGE_IDS if wide else NARROW_EDGE_IDS
        batch_size = 1 if wide else draw(st.integers(1, 4), label="B")
        sequence_length = draw(st.integers(2, MAX_LEN), label="S")
        dtype = draw(st.sampled_from((torch.int64, torch.int32)), label="dtype")
    else:
        batch_size = draw(st.integers(1, 2), label="B")
        sequence_length = draw(st.integers(150, MANY_LEN), label="S")
        dtype = draw(st.sampled_from((torch.int64, torch.int32)), label="dtype")
        kinds = ("new",) * 20 + ("same", "zero")

    def documents() -> int:
        if form == "many ids":
            return sequence_length
        if layout == "binary":
            return 1
        return draw(st.sampled_from((1, 2, sequence_length)), label="max_documents")

    gapped = layout != "binary" and draw(st.booleans(), label="gapped")
    shared = documents()
    rows = [
        draw(_id_row(sequence_length, documents() if layout == "per row" else shared, gapped, edges, kinds))
        for _ in range(batch_size)
    ]
    if dtype != torch.bool and draw(st.booleans(), label="with negatives"):
        rows = draw(_with_negatives(rows, dtype))
    if not any(any(row) for row in rows):
        rows[draw(st.integers(0, batch_size - 1))][0] = 1
    mask = torch.tensor(rows, dtype=torch.int64)
    return mask != 0 if dtype == torch.bool else mask.to(dtype)


# -- the options of a call, as far as the backend declares them --------------------------------


def draw_xdoc(data, backend) -> bool:
    """``allow_cross_document_attention``: either, when the backend declares ``xdoc``."""
    return data.draw(st.booleans(), label="xdoc") if backend.supports("xdoc") else False


def draw_format(data, backend) -> str:
    """``output_format``: either, when the backend declares ``thd``."""
    formats = ("batched", "thd") if backend.supports("thd") else ("batched",)
    return data.draw(st.sampled_from(formats), label="output_format")


def usable_contract(contract: Contract, backend) -> Contract:
    """The drawn contract, without a metadata request when the backend has no metadata."""
    if backend.supports("packed_metadata"):
        return contract
    return replace(contract, return_packed_sequence_metadata=False)


class Route(NamedTuple):
    """The options of one ``convert_text_batch`` call besides its rows and label options."""

    contract: Contract
    xdoc: bool
    output_format: str
    pad_to_length: int | None
    pad_token_id: int | None


def draw_route(
    data,
    backend,
    case: PackedBatch,
    *,
    xdoc: bool | None = None,
    output_format: str | None = None,
    unpacked: bool | None = None,
) -> Route:
    """Any route and option combination of ``convert_text_batch`` the backend declares: the
    case's contract (its metadata request only with ``packed_metadata``), xdoc on or off
    (``xdoc``), either format (``thd``) and, with ``unpacked``, ``pad_to_length`` from L to
    L + 3 over the case's packed rows (their Zephon packing metadata included) with a drawn
    ``pad_token_id``, or neither. ``xdoc``, ``output_format`` and ``unpacked`` fix that
    option instead of drawing it."""
    if unpacked is None:
        unpacked = backend.supports("unpacked") and data.draw(st.booleans(), label="unpacked")
    pad_to_length = pad_token_id = None
    if unpacked:
        length = len(case.rows[0].tokens)
        pad_to_length = data.draw(st.integers(length, length + 3), label="pad_to_length")
        pad_token_id = data.draw(st.sampled_from((PAD_TOKEN_ID, 1, 7, MAX_TOKEN_ID)), label="pad_token_id")
    return Route(
        usable_contract(case.contract, backend),
        draw_xdoc(data, backend) if xdoc is None else xdoc,
        draw_format(data, backend) if output_format is None else output_format,
        pad_to_length,
        pad_token_id,
    )


def call_arguments(case: PackedBatch, route: Route) -> tuple:
    """``convert_text_batch``'s arguments after the sample batch, positionally, for ``case``
    taken on ``route``."""
    return (
        route.contract,
        case.ignore_index,
        case.mask_segment_starts,
        route.xdoc,
        route.output_format,
        route.pad_to_length,
        route.pad_token_id,
    )


def describe_call(
    rows,
    contract,
    *,
    ignore_index,
    mask_segment_starts,
    xdoc,
    output_format="batched",
    pad_to_length=None,
    pad_token_id=None,
) -> str:
    """A runnable description of one ``convert_text_batch`` call on drawn rows (``rows`` may be
    their literal already, e.g. ``describe_long_rows``')."""
    literal = rows if isinstance(rows, str) else describe_rows(rows)
    text = (
        f"convert_text_batch(sample_batch({literal}), {contract!r}, ignore_index={ignore_index}, "
        f"mask_segment_starts={mask_segment_starts}, allow_cross_document_attention={xdoc}, "
        f"output_format={output_format!r}"
    )
    if pad_to_length is not None or pad_token_id is not None:
        text += f", pad_to_length={pad_to_length}, pad_token_id={pad_token_id}"
    return text + ")"


def describe_route_call(case: PackedBatch, route: Route, rows=None) -> str:
    """``describe_call`` of ``case`` taken on ``route`` (the arguments ``call_arguments`` gives),
    on ``rows`` when given (e.g. the rows as laid out), else on ``case.rows``."""
    return describe_call(
        case.rows if rows is None else rows,
        route.contract,
        ignore_index=case.ignore_index,
        mask_segment_starts=case.mask_segment_starts,
        xdoc=route.xdoc,
        output_format=route.output_format,
        pad_to_length=route.pad_to_length,
        pad_token_id=route.pad_token_id,
    )


def draw_token_fields(data) -> tuple[str, tuple[str, ...]]:
    """A token field of ``TOKEN_FIELDS`` (``input_ids`` most often) and the later candidates
    that also appear in the payload with other values (``with_token_field``)."""
    field = data.draw(st.sampled_from(TOKEN_FIELDS[:1] * 3 + TOKEN_FIELDS), label="token_field")
    later = TOKEN_FIELDS[TOKEN_FIELDS.index(field) + 1 :]
    decoys = data.draw(st.lists(st.sampled_from(later), unique=True), label="decoys") if later else []
    return field, tuple(decoys)


# -- the three input classes at an edge: a bound reached, unsigned arrays, a fault in any column ------------

# [ctb-input-errors] item 6 on unsigned arrays: the values a numpy uint64 array holds beyond int64
# (one past int64's largest, and uint64's largest); lists also hold one below int64's smallest.
BEYOND_INT64: tuple[int, ...] = (2**63, 2**64 - 1)
# Unsigned numpy dtypes a payload field may have (SPEC 1.2 [tb-dtypes]: "whatever the dtype of the payload").
UNSIGNED_DTYPES: tuple[Any, ...] = (np.uint8, np.uint16, np.uint32, np.uint64)


def fault_columns(length: int) -> st.SearchStrategy[int]:
    """A column of a row of ``length`` elements: the first or the last one most often (a check
    that skips a row's first or last element, e.g. one that reads only ``position_ids`` =
    ``positions[:S]`` or only the label targets ``tokens[1:]``, misses a fault there), else any."""
    return st.one_of(st.sampled_from((0, length - 1)), st.sampled_from((0, length - 1)), st.integers(0, length - 1))


def largest_translated_position(rows: list[Row]) -> int:
    """The largest translated position of ``rows`` under xdoc [xdoc-positions] over the real
    inputs (``document_ids > 0``, [ctb-document-ids]) of the first S = L - 1 columns, the tokens
    [xdoc-contract] bounds: per row, subdocument 1 keeps its positions and subdocument k is
    shifted by one more than the largest translated position of subdocument k - 1."""
    largest = -1
    for row in rows:
        positions = row_positions(row)[: len(row.tokens) - 1]
        real = len(row.tokens) - (row.padding_length or 0)
        offset, top = 0, -1
        for i, position in enumerate(positions[:real]):
            if position == 0 and i > 0:
                offset = top + 1
            top = max(top, position + offset)
        largest = max(largest, top)
    return largest


@st.composite
def xdoc_bounds(draw: st.DrawFn, rows: list[Row]) -> tuple[int, bool]:
    """A ``max_sequence_length`` at the edge of ``rows``' largest translated position P
    (``largest_translated_position``) and whether [xdoc-contract] rejects it: exactly P (a
    translated position equal to the bound raises) or P + 1 (the tightest bound that passes)."""
    largest = largest_translated_position(rows)
    bound = draw(st.sampled_from((largest, largest + 1)), label="max_sequence_length")
    return bound, bound <= largest


class ElementFault(NamedTuple):
    """One fault planted in one element of a valid batch (``element_faults``): record ``record``'s
    ``field`` (``"input_ids"`` or ``"positions"``) holds ``value`` at ``column``, the field given
    in ``form`` (``"list"``, ``"numpy int64"``, ``"numpy uint64"``); [ctb-input-errors] item
    ``item`` requires ``error`` naming the record and the field."""

    case: PackedBatch
    record: int
    field: str
    column: int
    value: Any
    form: str
    error: type
    item: int

    def values(self) -> list:
        """The faulty field's values (Python objects)."""
        row = self.case.rows[self.record]
        values = list(row.tokens if self.field == "input_ids" else row_positions(row))
        values[self.column] = self.value
        return values

    def payload_value(self) -> Any:
        """The faulty field as the payload holds it, in ``form``."""
        values = self.values()
        if self.form == "list":
            return values
        return np.asarray(values, dtype=np.uint64 if self.form == "numpy uint64" else np.int64)

    def describe(self) -> str:
        return (
            f"records[{self.record}].{self.field}[{self.column}] = {self.value!r} (the field as {self.form}): "
            f"{self.error.__name__} of [ctb-input-errors] item {self.item} naming record {self.record} and {self.field}"
        )


@st.composite
def element_faults(draw: st.DrawFn) -> ElementFault:
    """A drawn packed batch (``packed_batches``) with one element fault of a rule that [ctb-input-errors]
    checks per element, in a drawn record (the first and the last often) and a drawn column
    (``fault_columns``: the first and the last often):

    * item 4: a non-integer, the element's own value as a float (so no other rule breaks), in a
      token list or a ``positions`` list;
    * item 6: a value outside int64, ``BEYOND_INT64`` in a list or a numpy uint64 array (an
      unsigned array read through int64 wraps it to a negative value), or one below int64's
      smallest in a list;
    * item 10: a negative position (-1 or int64's smallest), in a list or a numpy int64 array.

    At column 0 of ``positions`` items 6 and 10 both apply (the positions do not start at 0):
    either is a ``ValueError`` naming the record and ``positions``."""
    case = draw(packed_batches(), label="case")
    record = draw(
        st.one_of(st.sampled_from((0, len(case.rows) - 1)), st.integers(0, len(case.rows) - 1)), label="record"
    )
    row = case.rows[record]
    rule = draw(st.sampled_from(("beyond int64", "negative position", "non-integer")), label="rule")
    field = (
        "positions" if rule == "negative position" else draw(st.sampled_from(("input_ids", "positions")), label="field")
    )
    if field == "positions" and row.positions is None:
        if rule == "negative position":
            case = case._replace(
                rows=[
                    *case.rows[:record],
                    Row(row.tokens, row_positions(row), row.padding_length),
                    *case.rows[record + 1 :],
                ]
            )
        else:
            field = "input_ids"
    column = draw(fault_columns(len(row.tokens)), label="column")
    current = (case.rows[record].tokens if field == "input_ids" else row_positions(case.rows[record]))[column]
    if rule == "non-integer":  # the value as a float, or 1.0 where a float would leave int64's exact range
        value = float(current) if abs(current) < 2**53 else 1.0
        return ElementFault(case, record, field, column, value, "list", TypeError, 4)
    if rule == "beyond int64":
        form = draw(st.sampled_from(("numpy uint64", "list")), label="form")
        choices = BEYOND_INT64 if form == "numpy uint64" else (*BEYOND_INT64, -(2**63) - 1)
        value = draw(st.sampled_from(choices), label="value")
        if form == "numpy uint64" and any(v < 0 for v in (row.tokens if field == "input_ids" else ())):
            form = "list"  # the other tokens do not fit an unsigned array: keep the fault, as a list
        return ElementFault(case, record, field, column, value, form, ValueError, 6)
    value = draw(st.sampled_from((-1, -(2**63))), label="value")
    form = draw(st.sampled_from(("list", "numpy int64")), label="form")
    return ElementFault(case, record, field, column, value, form, ValueError, 10)


class UnsignedBatch(NamedTuple):
    """A valid batch whose payload fields are numpy unsigned arrays (``unsigned_edge_batches``):
    ``rows`` (values as Python ints) and, per ``(record, field)``, the numpy dtype it is given as."""

    case: PackedBatch
    dtypes: dict[tuple[int, str], Any]

    def describe(self) -> str:
        return ", ".join(f"records[{r}].{f} as np.{np.dtype(d).name}" for (r, f), d in sorted(self.dtypes.items()))


@st.composite
def unsigned_edge_batches(draw: st.DrawFn) -> UnsignedBatch:
    """A drawn packed batch (``packed_batches``) whose token fields and ``positions`` are numpy
    unsigned arrays (``UNSIGNED_DTYPES``), each record and field its own dtype, holding values
    at the dtype's edge in drawn columns (``fault_columns``): the dtype's largest value
    (255, 65535, 2**32 - 1) and, for uint64, int64's largest 2**63 - 1, the largest a token or a
    position may be ([ctb-input-errors] item 6). A position at the edge is placed after column 0
    (it is a jump, not a boundary [ctb-boundaries-from-zeros]). A token field holding a negative
    value (an int64-edge token) stays a list."""
    case = draw(packed_batches(), label="case")
    rows, dtypes = [], {}
    for index, row in enumerate(case.rows):
        tokens, positions = list(row.tokens), None if row.positions is None else list(row.positions)
        for field, values in (("input_ids", tokens), ("positions", positions)):
            if values is None or min(values) < 0:
                continue
            fitting = [d for d in UNSIGNED_DTYPES if max(values) <= min(np.iinfo(d).max, 2**63 - 1)]
            dtype = draw(st.sampled_from(fitting), label=f"dtype[{index}].{field}")
            edge = min(int(np.iinfo(dtype).max), 2**63 - 1)
            columns = draw(st.sets(fault_columns(len(values)), max_size=2), label=f"edge columns[{index}].{field}")
            for column in columns:
                if field == "input_ids" or column > 0:
                    values[column] = edge
            dtypes[(index, field)] = dtype
        rows.append(Row(tuple(tokens), None if positions is None else tuple(positions), row.padding_length))
    return UnsignedBatch(case._replace(rows=rows), dtypes)


# -- masks longer than one GPU block (issue 33) -------------------------------------------------------

# Block sizes (lanes per program) GPU kernels commonly take: a row one column past one of them
# needs a second block, and a boundary at a block edge (column k * block - 1 | k * block) is
# where an off-by-one in a block's offset or its tail mask shows.
GPU_BLOCKS: tuple[int, ...] = (128, 256, 512, 1024, 2048, 4096)
# Row lengths of the "long rows" masks: one past a block (the tail block holds one lane), exactly
# two blocks, and 1025 most often (one past 1024, the block most kernels of this kind take).
BLOCK_ROW_LENGTHS: tuple[int, ...] = (1025, 4097, 2049, 1025, 1025, 2048, 513)
# Span counts of the "many spans" masks: a per-span scan of a block of 1024 needs a second block.
BLOCK_SPAN_COUNTS: tuple[int, ...] = (1025, 1025, 1026, 1100, 2049)
# The forms of ``block_masks`` and their weights (out of 16).
BLOCK_MASK_FORMS: tuple[str, ...] = ("long rows",) * 8 + ("many spans",) * 7 + ("many rows",)


@st.composite
def _block_row(draw: st.DrawFn, length: int, binary: bool) -> list[int]:
    """One row of ``length`` ids, non-decreasing along the row with zeros anywhere (inside
    [unpad-precondition]'s order), cut into runs at one or two block edges of ``GPU_BLOCKS``
    (1024 most often; now and then one column before or after the edge) and at up to three
    other columns. Each run is zeros (an exclusion, or the padding tail), the current id, or
    the next one (always 1 when ``binary``)."""
    edges = [e for e in GPU_BLOCKS if e < length]
    preferred = [e for e in edges if e == 1024] or edges
    chosen = draw(
        st.lists(st.one_of(st.sampled_from(preferred), st.sampled_from(edges)), min_size=1, max_size=2),
        label="edges",
    )
    cuts = {min(max(e + draw(st.sampled_from((0, 0, 0, -1, 1)), label="offset"), 1), length - 1) for e in chosen}
    cuts |= draw(st.sets(st.integers(1, length - 1), max_size=3), label="cuts")
    bounds = [0, *sorted(cuts), length]
    row, current = [], 0
    for k in range(len(bounds) - 1):
        kind = draw(st.sampled_from(("zero", "same", "new", "new")), label="run")
        if kind == "zero":
            value = 0
        else:
            if current == 0 or (kind == "new" and not binary):
                current += 1
            value = current
        row.extend([value] * (bounds[k + 1] - bounds[k]))
    return row


@st.composite
def _many_span_rows(draw: st.DrawFn) -> list[list[int]]:
    """One or two rows holding ``BLOCK_SPAN_COUNTS`` spans in all: ids 1, 2, ... of one token
    each, up to three of them two tokens long, a few zeros, every row zero-padded to one length."""
    total = draw(st.sampled_from(BLOCK_SPAN_COUNTS), label="spans")
    if draw(st.booleans(), label="one row"):
        counts = [total]
    else:
        first = draw(st.integers(1, total - 1), label="spans in row 0")
        counts = [first, total - first]
    rows = []
    for b, count in enumerate(counts):
        doubled = draw(st.sets(st.integers(1, count), max_size=3), label=f"two-token ids[{b}]")
        zeros = draw(st.sets(st.integers(0, count), max_size=2), label=f"zeros before id[{b}]")
        row = []
        for document_id in range(1, count + 1):
            if document_id - 1 in zeros:
                row.append(0)
            row.extend([document_id] * (2 if document_id in doubled else 1))
        rows.append(row)
    length = max(len(row) for row in rows) + draw(st.integers(0, 2), label="tail")
    return [row + [0] * (length - len(row)) for row in rows]


@st.composite
def block_masks(draw: st.DrawFn) -> torch.Tensor:
    """A ``[B, S]`` mask for the metadata builders that a kernel of ``GPU_BLOCKS``-wide programs
    covers with more than one block, inside [unpad-precondition]'s order (values >= 0, ids
    non-decreasing along each row once zeros are removed). Three forms (``BLOCK_MASK_FORMS``):

    * ``long rows`` (8 in 16): B in 1..3, S in ``BLOCK_ROW_LENGTHS`` (one past a block, most
      often 1025), each row a ``_block_row``: a span, zero run or padding tail boundary exactly
      at a block edge (1023 | 1024 most often). int64, int32 or int16 ids (the indexed route),
      or one id per row (binary: bool, or an integer mask of 0/1).
    * ``many spans`` (7 in 16): one or two rows with ``BLOCK_SPAN_COUNTS`` spans in all (1025
      and up: a per-span scan over blocks of 1024 needs a second block), ids 1, 2, ... of
      mostly one token; int64, int32 or int16.
    * ``many rows`` (1 in 16): 1025 or 1100 non-empty rows of S in 1..3 (the binary route: one
      span per row) and up to two empty rows; bool or int64 0/1.

    Each form holds at least one nonzero entry. The draws stay small (a few runs, a few sets),
    whatever the mask's size."""
    form = draw(st.sampled_from(BLOCK_MASK_FORMS), label="form")
    if form == "long rows":
        length = draw(st.sampled_from(BLOCK_ROW_LENGTHS), label="S")
        binary = draw(st.integers(0, 3), label="binary") == 0
        batch_size = draw(st.integers(1, 3), label="B")
        rows = [draw(_block_row(length, binary), label=f"row {b}") for b in range(batch_size)]
        if not any(any(row) for row in rows):
            rows[0][min(1023, length - 1)] = 1
        choices = (
            (torch.bool, torch.int64, torch.int32, torch.int16) if binary else (torch.int64, torch.int32, torch.int16)
        )
        dtype = draw(st.sampled_from(choices), label="dtype")
    elif form == "many spans":
        rows = draw(_many_span_rows(), label="rows")
        dtype = draw(st.sampled_from((torch.int64, torch.int32, torch.int16)), label="dtype")
    else:
        spans = draw(st.sampled_from((1025, 1100)), label="spans")
        empty = draw(st.integers(0, 2), label="empty rows")
        length = draw(st.integers(1, 3), label="S")
        rows = [[1] * length for _ in range(spans + empty)]
        for b in draw(st.lists(st.integers(0, spans + empty - 1), min_size=empty, max_size=empty, unique=True)):
            rows[b] = [0] * length
        dtype = draw(st.sampled_from((torch.bool, torch.int64)), label="dtype")
    mask = torch.tensor(rows, dtype=torch.int64)
    return mask != 0 if dtype == torch.bool else mask.to(dtype)


def _runs(values: list) -> str:
    """``values`` as a Python expression of runs: ``[1] * 1024 + [2] + list(range(3, 1028))``
    (equal values, and ids that go up by one, three or more in a row)."""
    parts, start = [], 0
    while start < len(values):
        end = start + 1
        while end < len(values) and values[end] == values[start]:
            end += 1
        if end - start == 1 and type(values[start]) is int:
            step = start + 1
            while step < len(values) and type(values[step]) is int and values[step] == values[step - 1] + 1:
                step += 1
            if step - start >= 3:
                parts.append(f"list(range({values[start]}, {values[step - 1] + 1}))")
                start = step
                continue
        parts.append(f"[{values[start]!r}] * {end - start}" if end - start > 1 else f"[{values[start]!r}]")
        start = end
    return " + ".join(parts) or "[]"


def describe_mask(mask: torch.Tensor) -> str:
    """A runnable, run-length literal of a 2-D mask: ``torch.tensor([[1] * 1024 + [2] * 1, ...],
    dtype=torch.int16)``, equal rows in a row run (``[[1] * 2] * 1025``), so a mask of
    thousands of entries reads in a line."""
    rows = [[bool(v) if mask.dtype == torch.bool else int(v) for v in row] for row in mask.tolist()]
    parts, start = [], 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i] != rows[start]:
            literal = f"[{_runs(rows[start])}]"
            parts.append(f"{literal} * {i - start}" if i - start > 1 else literal)
            start = i
    return f"torch.tensor({' + '.join(parts) or '[]'}, dtype={mask.dtype})"


@st.composite
def block_batches(draw: st.DrawFn) -> PackedBatch:
    """``convert_text_batch`` rows a kernel covers with more than one block: B in 1..2 packed
    rows of S = L - 1 in ``BLOCK_ROW_LENGTHS`` (1025 most often), each split into documents at
    one or two block edges of ``GPU_BLOCKS`` (a document starting at input column 1024 most
    often: the boundary 1023 | 1024, now and then one column off) and up to two other columns,
    the pad tail starting at a block edge, elsewhere, or absent. Tokens are ``start``,
    ``start + 1``, ... (every label differs from its input); options as ``packed_batches``, the
    contract requesting the metadata (either mask type)."""
    length = draw(st.sampled_from(BLOCK_ROW_LENGTHS), label="S") + 1
    edges = [e for e in GPU_BLOCKS if e < length - 1]
    preferred = [e for e in edges if e == 1024] or edges
    rows = []
    for b in range(draw(st.integers(1, 2), label="B")):
        real = length - draw(
            st.one_of(st.just(0), st.sampled_from([length - e for e in edges]), st.integers(1, length - 2)),
            label=f"padding[{b}]",
        )
        chosen = draw(st.lists(st.sampled_from(preferred + edges), min_size=1, max_size=2), label=f"edges[{b}]")
        cuts = {e + draw(st.sampled_from((0, 0, 0, -1, 1)), label="offset") for e in chosen}
        cuts |= draw(st.sets(st.integers(1, length - 1), max_size=2), label=f"cuts[{b}]")
        bounds = [0, *sorted(c for c in cuts if 0 < c < real), real]
        start = draw(st.integers(1, MAX_TOKEN_ID), label=f"start[{b}]")
        tokens = list(range(start, start + real))
        documents = [tokens[bounds[k] : bounds[k + 1]] for k in range(len(bounds) - 1)]
        rows.append(packed_row(documents, length - real, pad_token_id=PAD_TOKEN_ID))
    return PackedBatch(
        rows=rows,
        ignore_index=draw(st.sampled_from(IGNORE_INDICES), label="ignore_index"),
        mask_segment_starts=draw(st.booleans(), label="mask_segment_starts"),
        contract=Contract(draw(st.sampled_from(("block_causal", "document_ids")), label="mask type"), True),
    )


def describe_long_rows(rows: list[Row]) -> str:
    """``rows`` as a runnable literal in runs (``Row(tokens=list(range(7, 1033)) + [0],
    positions=list(range(0, 1024)) + ..., padding_length=1)``), short whatever the length."""
    return (
        "["
        + ", ".join(
            f"Row(tokens={_runs(list(r.tokens))}, "
            f"positions={None if r.positions is None else _runs(list(r.positions))}, padding_length={r.padding_length})"
            for r in rows
        )
        + "]"
    )
