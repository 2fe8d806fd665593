"""Hypothesis strategies for the conformance suite: packed rows, packed batches, id masks.

Every strategy builds inputs the way Zephon 0.2.0 emits them (``batchspec.conformance.helpers.inputs``) and
never asserts. Sizes are capped by module constants that environment variables override:

* ``BATCHSPEC_MAX_BATCH`` (default 16): the most rows in a drawn batch or mask (a backend
  that mishandles row 5 or row 9 must meet such a batch);
* ``BATCHSPEC_MAX_LEN`` (default 33): the longest unshifted row L (so S = L - 1 <= 32), and
  the longest ``[B, S]`` id mask.

The caps are small on purpose: the reference is written as plain loops (its block-causal
mask is O(B * S**2) Python), and every example runs it at least once. Shrinking makes the
small cases the ones that are reported, so larger caps find few extra bugs.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import NamedTuple

import torch
from hypothesis import strategies as st

from batchspec.conformance.helpers.inputs import TOKEN_FIELDS, Contract, Row, describe_rows, packed_row
from batchspec.conformance.helpers.literals import IGNORE_INDEX

__all__ = [
    "IGNORE_INDICES",
    "MAX_BATCH",
    "MAX_LEN",
    "EDGE_TOKEN_IDS",
    "MAX_TOKEN_ID",
    "PAD_TOKEN_ID",
    "PackedBatch",
    "Route",
    "contracts",
    "describe_call",
    "draw_format",
    "draw_route",
    "draw_token_fields",
    "draw_xdoc",
    "document_lengths",
    "id_masks",
    "packed_batches",
    "packed_rows",
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

assert MAX_BATCH >= 1 and MAX_LEN >= 2, "BATCHSPEC_MAX_BATCH >= 1 and BATCHSPEC_MAX_LEN >= 2"  # sanity check


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
def packed_batches(draw: st.DrawFn) -> PackedBatch:
    """B in 1..MAX_BATCH packed rows of one unshifted length L in 2..MAX_LEN, and options."""
    length = draw(st.integers(2, MAX_LEN), label="L")
    rows = draw(st.lists(packed_rows(length), min_size=1, max_size=MAX_BATCH), label="rows")
    return PackedBatch(
        rows=rows,
        ignore_index=draw(st.sampled_from(IGNORE_INDICES), label="ignore_index"),
        mask_segment_starts=draw(st.booleans(), label="mask_segment_starts"),
        contract=draw(contracts(), label="contract"),
    )


@st.composite
def _id_row(draw: st.DrawFn, sequence_length: int, max_documents: int, gapped: bool) -> list[int]:
    """One row of 1-based ids, non-decreasing along the row, with zeros anywhere.

    Walking along the row each slot is ``zero`` (id 0), ``same`` (the current id, or the
    first id when none started yet) or ``new`` (the next id). ``gapped`` lets a new id skip
    one (the first id may then be 2). At most ``max_documents`` ids start; further ``new`` slots continue the last id.
    """
    kinds = draw(st.lists(st.sampled_from(("zero", "same", "new")), min_size=sequence_length, max_size=sequence_length))
    row, current, started = [], 0, 0
    for kind in kinds:
        if kind == "zero":
            row.append(0)
            continue
        if current == 0 or (kind == "new" and started < max_documents):
            current += draw(st.sampled_from((1, 2))) if gapped else 1
            started += 1
        row.append(current)
    return row


@st.composite
def id_masks(draw: st.DrawFn) -> torch.Tensor:
    """A ``[B, S]`` mask for the metadata builders, with at least one nonzero entry.

    Integer masks (int64, sometimes int32) hold 1-based row-local ids that increase along the
    row, each id one run that interior zeros may interrupt (as SPEC Example K's ``[1,0,1,2]``);
    sometimes ids are gapped (``[1,1,3,3]``, ``[2,2,0]``), sometimes a mask holds only 0/1 (the binary
    route). Bool masks are arbitrary. Rows may be empty; when every row is, one entry is set.
    """
    batch_size = draw(st.integers(1, MAX_BATCH), label="B")
    sequence_length = draw(st.integers(1, MAX_LEN), label="S")
    dtype = draw(st.sampled_from((torch.int64, torch.int64, torch.int64, torch.int32, torch.bool)), label="dtype")
    max_documents = draw(st.sampled_from((1, 2, sequence_length)), label="max_documents")
    gapped = draw(st.booleans(), label="gapped")
    rows = [draw(_id_row(sequence_length, max_documents, gapped)) for _ in range(batch_size)]
    if not any(any(row) for row in rows):
        rows[draw(st.integers(0, batch_size - 1))][0] = 1
    mask = torch.tensor(rows, dtype=torch.int64)
    return mask > 0 if dtype == torch.bool else mask.to(dtype)


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
    """A runnable description of one ``convert_text_batch`` call on drawn rows."""
    text = (
        f"convert_text_batch(sample_batch({describe_rows(rows)}), {contract!r}, ignore_index={ignore_index}, "
        f"mask_segment_starts={mask_segment_starts}, allow_cross_document_attention={xdoc}, "
        f"output_format={output_format!r}"
    )
    if pad_to_length is not None or pad_token_id is not None:
        text += f", pad_to_length={pad_to_length}, pad_token_id={pad_token_id}"
    return text + ")"


def draw_token_fields(data) -> tuple[str, tuple[str, ...]]:
    """A token field of ``TOKEN_FIELDS`` (``input_ids`` most often) and the later candidates
    that also appear in the payload with other values (``with_token_field``)."""
    field = data.draw(st.sampled_from(TOKEN_FIELDS[:1] * 3 + TOKEN_FIELDS), label="token_field")
    later = TOKEN_FIELDS[TOKEN_FIELDS.index(field) + 1 :]
    decoys = data.draw(st.lists(st.sampled_from(later), unique=True), label="decoys") if later else []
    return field, tuple(decoys)
