"""Building real ``zephon.SampleBatch`` inputs and packing contracts for tests.

``sample_batch`` builds records exactly as Zephon 0.2.0's ``pack_flat`` emits them: the
payload holds the unshifted token list and ``positions`` as an int32 numpy array, and
``meta.tags["_packing_metadata"]["padding_length"]`` counts the trailing pad tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from zephon import SampleBatch, SampleMeta, SampleRecord

from batchspec.conformance.helpers.asserts import clause_failure
from batchspec.conformance.helpers.storage import input_state, listed_changes, state_changes

__all__ = [
    "TOKEN_FIELDS",
    "Contract",
    "Row",
    "describe_rows",
    "packed_row",
    "payload_form",
    "row_positions",
    "assert_batch_unchanged",
    "rows_of",
    "sample_batch",
    "unpacked_row",
    "with_token_field",
]


# [ctb-token-field] The token field of a payload: the first of these present (Zephon's order).
TOKEN_FIELDS = ("input_ids", "tokens", "token_ids", "ids")


@dataclass(frozen=True)
class Contract:
    """A packing contract built by the test, independent of any backend's own class."""

    packed_mask_type: str = "block_causal"
    return_packed_sequence_metadata: bool = False
    return_document_ids: bool = False
    max_sequence_length: int | None = None


@dataclass(frozen=True)
class Row:
    """One unshifted packed row."""

    tokens: tuple[int, ...]
    positions: tuple[int, ...] | None
    padding_length: int | None


def row_positions(row: Row) -> tuple[int, ...]:
    """The unshifted positions of ``row`` [ctb-positions]: its ``positions``, or, for a record
    without them, one document ``0 .. L-n-1`` over the real tokens followed by the pad tail
    ``0 .. n-1`` (as ``pack_flat`` numbers padding)."""
    if row.positions is not None:
        return tuple(row.positions)
    padding = row.padding_length or 0
    real = len(row.tokens) - padding
    return tuple(range(real)) + tuple(range(padding))


def unpacked_row(row: Row, pad_to_length: int, pad_token_id: int) -> Row:
    """``row`` after the unpacked route's padding to ``pad_to_length`` [unpacked-padding]: the
    appended ``pad_token_id`` tokens join its padding, and their positions continue its pad tail
    (``n, n + 1, ...``); a row already that long is returned as it is."""
    extra = pad_to_length - len(row.tokens)
    if extra <= 0:
        return row
    n = row.padding_length or 0
    positions = row_positions(row) + tuple(range(n, n + extra))
    return Row(row.tokens + (pad_token_id,) * extra, positions, n + extra)


def packed_row(documents: Sequence[Sequence[int]], padding: int, pad_token_id: int = 0) -> Row:
    """A row holding ``documents`` back to back, then ``padding`` pad tokens; positions
    restart at 0 for every document and for the pad tail (as ``pack_flat`` does)."""
    tokens: list[int] = []
    positions: list[int] = []
    for document in documents:
        tokens.extend(document)
        positions.extend(range(len(document)))
    tokens.extend([pad_token_id] * padding)
    positions.extend(range(padding))
    return Row(tuple(tokens), tuple(positions), padding)


def sample_batch(rows: Sequence[Row]) -> SampleBatch:
    """A real ``zephon.SampleBatch`` holding ``rows`` (``positions=None`` omits the field,
    ``padding_length=None`` omits the packing metadata, as for unpacked records)."""
    records = []
    for index, row in enumerate(rows):
        payload: dict = {"input_ids": list(row.tokens)}
        if row.positions is not None:
            payload["positions"] = np.asarray(row.positions, dtype=np.int32)
        tags = {}
        if row.padding_length is not None:
            real = len(row.tokens) - row.padding_length
            tags["_packing_metadata"] = {
                "num_sequences": sum(1 for p in (row.positions or (0,))[:real] if p == 0),
                "total_length": real,
                "packing_efficiency": real / len(row.tokens) if row.tokens else 0.0,
                "padding_length": row.padding_length,
            }
        meta = SampleMeta(
            sample_id=(0, 0, index),
            lane_id=0,
            chunk_id=0,
            chunk_offset=index,
            component_token_counts={0: len(row.tokens)},
            tags=tags,
        )
        records.append(SampleRecord(meta=meta, payload=payload))
    return SampleBatch(records=tuple(records))


def payload_form(batch: SampleBatch, form: str) -> SampleBatch:
    """Rewrite ``batch``'s payloads in place as int64 numpy arrays (``"numpy"``) or int64
    tensors (``"tensor"``); ``"lists"`` keeps ``pack_flat``'s token list and int32 numpy
    positions. A backend that aliases its input would then share storage with it."""
    for record in batch.records:
        for key in list(record.payload):
            if form == "numpy":
                record.payload[key] = np.asarray(record.payload[key], dtype=np.int64)
            elif form == "tensor":
                record.payload[key] = torch.as_tensor(np.asarray(record.payload[key]), dtype=torch.int64)
    return batch


def with_token_field(batch: SampleBatch, field: str, decoys: Sequence[str] = ()) -> SampleBatch:
    """Rewrite ``batch``'s payloads in place so that the tokens sit under ``field`` (one of
    ``TOKEN_FIELDS``) and each later candidate of ``decoys`` holds other values (every token
    with its lowest bit flipped), as a payload with several candidate fields would: [ctb-token-field] reads the
    first candidate present, and the others are payload fields like any other
    [ctb-extra-payload-ignored]. A decoy holds every token with its lowest bit flipped (another
    value, inside int64)."""
    assert field in TOKEN_FIELDS and all(TOKEN_FIELDS.index(d) > TOKEN_FIELDS.index(field) for d in decoys)  # sanity
    for record in batch.records:
        tokens = record.payload.pop("input_ids")
        record.payload[field] = tokens
        for decoy in decoys:
            record.payload[decoy] = [int(t) ^ 1 for t in tokens]
    return batch


def describe_rows(rows: Sequence[Row]) -> str:
    """The rows as a reproducible Python literal, for failure messages."""
    return (
        "["
        + ", ".join(
            f"Row(tokens={list(r.tokens)}, positions={None if r.positions is None else list(r.positions)}, "
            f"padding_length={r.padding_length})"
            for r in rows
        )
        + "]"
    )


def rows_of(batch: SampleBatch) -> list[Row]:
    """The unshifted rows of a real ``SampleBatch`` (e.g. from a Zephon pipeline): the token
    field by [ctb-token-field] order, ``positions`` if present, ``meta.padding_length``."""
    rows = []
    for record in batch.records:
        payload = record.payload
        field = next(name for name in TOKEN_FIELDS if name in payload)
        positions = payload.get("positions")
        rows.append(
            Row(
                tokens=tuple(int(t) for t in torch.as_tensor(payload[field]).tolist()),
                positions=None if positions is None else tuple(int(p) for p in torch.as_tensor(positions).tolist()),
                padding_length=record.meta.padding_length,
            )
        )
    return rows


def assert_batch_unchanged(before: dict[str, tuple], batch: SampleBatch, *, what: str, call: str) -> None:
    """The ``SampleBatch`` holds the same objects with the same values as in ``before``
    (``input_state(batch, "sample_batch")``): its records, payloads and meta, by identity, by
    layout and by value [ctb-no-mutation].

    Raises:
        ClauseFailure: naming each changed path with its value before and after.
    """
    __tracebackhide__ = True
    changes = state_changes(before, input_state(batch, "sample_batch"))
    if changes:
        raise clause_failure(
            f"the SampleBatch was changed {what}, but should be untouched",
            clause="ctb-no-mutation",
            call=call,
            details=listed_changes(changes),
        )
