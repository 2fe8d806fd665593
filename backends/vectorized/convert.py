"""``convert_text_batch`` as whole-batch tensor work.

Cost model (B rows of L unshifted tokens, S = L - 1):

* ingest: one pass over the B record objects; each field becomes an int64 array with one bulk
  conversion (``np.asarray`` of a list or array, ``Tensor.to`` of a tensor) whose dtype
  answers the bool/float/non-integer questions, then one ``torch.cat`` for the batch;
* validation: whole-batch reductions, read back together with the outputs' host values;
* shift, labels, masks, document ids: a fixed number of ``[B, S]`` element-wise passes;
* xdoc: one ``scatter_reduce`` into ``[B, S + 1]``, a ``cumsum`` and a ``gather``;
* metadata / THD lengths: one ``scatter_add`` into ``[B, S + 1]`` (span sizes) and a ``cumsum``
  over the row's spans; no ``[documents, S]`` temporary, no sort;
* ``block_causal``: one broadcast comparison and one in-place ``tril_``.

The number of torch operator calls depends on the options only, never on B's contents: not on
the documents per row, their lengths, or the values. On CUDA (tensor payloads on the device)
the function reads the device exactly once, a few scalars at the end: the validation flags,
and the largest id / ``max_seqlen`` the output shapes and the Python ``int`` need.
"""

from __future__ import annotations

import array
from collections.abc import Callable
from typing import Any, TypeGuard

import numpy as np
import torch

from batchspec.backends.vectorized.attention import xdoc_bound_error, xdoc_positions
from batchspec.backends.vectorized.metadata import metadata_from_spans, monotone_row_spans
from batchspec.backends.vectorized.output import block_causal_mask, thd_lengths_from_spans
from batchspec.backends.vectorized.rules import check_convert_options, output_device, sample_records, token_field_name
from batchspec.reference.contract import INT64_MAX, PackedSequenceContract, contract_requests_metadata

__all__ = ["convert_text_batch"]

# packed_mask_type -> the batched attention_mask built from the selected ids [batched-block-causal],
# [batched-document-ids-mask]
_PACKED_MASKS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "block_causal": block_causal_mask,
    "document_ids": torch.Tensor.clone,
}


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer_type(kind: type) -> bool:
    """An element type a token field may hold: Python ints (not bool) and numpy integers."""
    return (issubclass(kind, int) and kind is not bool) or issubclass(kind, np.integer)


def _ingest(value: Any, field: str, record: int) -> torch.Tensor | np.ndarray:
    """One 1-D integer field as an int64 array or tensor, with one bulk conversion
    [ctb-input-errors] items 4, 5, 6.

    Lists and tuples: one C-level pass over the element types (``set(map(type, ...))``) and
    one ``np.asarray(..., int64)`` (which overflows outside int64). numpy arrays and tensors:
    their dtype. A tensor stays a tensor on its device.
    """
    where = f"sample_batch record {record}: field {field}"
    if isinstance(value, torch.Tensor):
        if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
            raise TypeError(f"{where}: expected integers, got a {value.dtype} tensor")
        if value.ndim != 1:
            raise ValueError(f"{where}: expected 1-D [sequence], got shape {tuple(value.shape)}")
        if value.dtype in (torch.uint16, torch.uint32, torch.uint64):
            # torch barely supports the wide unsigned types (no max on CPU): read them as numpy.
            return _ingest(value.cpu().numpy(), field, record)
        return value.to(torch.int64)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise TypeError(f"{where}: expected integers, got a {value.dtype} array")
        if value.ndim != 1:
            raise ValueError(f"{where}: expected 1-D [sequence], got shape {value.shape}")
        if value.dtype.kind == "u" and value.size and int(value.max()) > INT64_MAX:
            raise ValueError(f"{where}: holds {int(value.max())}, outside the int64 range")
        return value.astype(np.int64, copy=False)
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{where}: expected a 1-D list, numpy array or tensor of integers, got {type(value).__name__}")
    # Fast path, what tokenizers and Zephon's pack_flat emit: every element is exactly an int.
    # Counting identical type objects is the cheapest exact C-level check we found (about
    # 0.7x of a bulk conversion on real rows); array.array then converts without numpy's dtype
    # discovery (about 0.85x of np.asarray), and numpy views its buffer without a copy.
    if list(map(type, value)).count(int) == len(value):
        try:
            return np.frombuffer(array.array("q", value), dtype=np.int64)
        except OverflowError:
            raise ValueError(f"{where}: holds a value outside the int64 range") from None
    kinds = set(map(type, value))
    for kind in kinds:
        if issubclass(kind, (list, tuple)):
            raise ValueError(f"{where}: expected 1-D [sequence], got a nested {kind.__name__}")
    for kind in kinds:
        if not _integer_type(kind):
            raise TypeError(f"{where}: expected integers, got an element of type {kind.__name__}")
    try:
        return np.asarray(value, dtype=np.int64)
    except OverflowError:
        raise ValueError(f"{where}: holds a value outside the int64 range") from None


class _Rows:
    """What the one pass over the records collects."""

    def __init__(self) -> None:
        self.tokens: list[Any] = []  # per record: int64 ndarray or tensor
        self.given: list[Any] = []  # per record: the token field as given (its device is [tb-device]'s)
        self.positions: list[Any] = []  # per record with positions
        self.with_positions: list[int] = []  # their record indices
        self.lengths: list[int] = []
        self.padding: list[int] = []


def _read_records(records: Any) -> _Rows:
    """The one pass over the B record objects [ctb-token-field, ctb-packed-needs-positions,
    ctb-extra-payload-ignored, ctb-input-errors] items 3-6, 9, 11, 12."""
    rows = _Rows()
    for index, record in enumerate(records):
        payload = record.payload
        field = token_field_name(payload, index)
        rows.given.append(payload[field])
        tokens = _ingest(payload[field], field, index)
        length = int(tokens.shape[0])
        if length == 0:
            raise ValueError(f"sample_batch record {index}: field {field} holds no token")
        if "positions" in payload:
            positions = _ingest(payload["positions"], "positions", index)
            if positions.shape[0] != length:
                raise ValueError(
                    f"sample_batch record {index}: positions has length {positions.shape[0]}, "
                    f"the token field {field} has length {length}"
                )
            rows.positions.append(positions)
            rows.with_positions.append(index)
        else:
            packing = record.meta.tags.get("_packing_metadata") or {}
            if (packing.get("num_sequences") or 1) > 1:
                raise ValueError(
                    f"sample_batch record {index}: packs {packing['num_sequences']} sequences "
                    "(meta _packing_metadata) but has no positions to find their boundaries"
                )
        padding = record.meta.padding_length
        if padding is None:
            padding = 0
        if not _is_int(padding):
            raise TypeError(f"sample_batch record {index}: padding_length must be an int or None, got {padding!r}")
        if not 0 <= padding < length:
            raise ValueError(
                f"sample_batch record {index}: padding_length {padding} is outside [0, {length - 1}] "
                f"(length {length}; a row keeps at least one real token)"
            )
        rows.tokens.append(tokens)
        rows.lengths.append(length)
        rows.padding.append(padding)
    return rows


def _as_batch(fields: list[Any], device: torch.device) -> torch.Tensor:
    """The fields concatenated into one new int64 tensor on ``device`` (never a view of an
    input)."""
    parts = [torch.from_numpy(f) if isinstance(f, np.ndarray) else f for f in fields]
    flat = torch.cat([part.to(device) for part in parts]) if len(parts) > 1 else parts[0].to(device, copy=True)
    return flat


def _place(flat: torch.Tensor, lengths: torch.Tensor, batch: int, width: int, fill: torch.Tensor) -> torch.Tensor:
    """Rows of ``lengths`` tokens, concatenated in ``flat``, left-aligned into ``fill``
    (``[batch, width]``, modified and returned)."""
    total = flat.shape[0]  # known on the host: output_size spares CUDA a device read
    rows = torch.repeat_interleave(torch.arange(batch, device=flat.device), lengths, output_size=total)
    starts = torch.cumsum(lengths, 0) - lengths
    columns = torch.arange(total, device=flat.device) - torch.repeat_interleave(starts, lengths, output_size=total)
    fill[rows, columns] = flat
    return fill


def convert_text_batch(
    sample_batch: Any,
    packing_contract: PackedSequenceContract,
    ignore_index: int,
    mask_segment_starts: bool,
    allow_cross_document_attention: bool,
    output_format: str = "batched",
    pad_to_length: int | None = None,
    pad_token_id: int | None = None,
) -> dict:
    """``batchspec.reference.convert.convert_text_batch``, vectorized over the whole batch
    (SPEC.md section 4, "``convert_text_batch``", and section 3's field table: outputs,
    shapes, dtypes, errors and clauses are there).

    The cost model is this module's docstring: one pass over the records, a fixed number of
    ``[B, S]`` tensor passes whatever the rows hold, and one host read at the end (the
    positions checks of [ctb-input-errors] item 10, the xdoc bound and the scalars the output
    shapes need), so those errors are raised after the tensor work.
    """
    check_convert_options(
        output_format, ignore_index, mask_segment_starts, allow_cross_document_attention, pad_to_length, pad_token_id
    )
    records = sample_records(sample_batch)
    rows = _read_records(records)
    batch = len(rows.lengths)

    # Row length after the unpacked route's padding [unpacked-padding, ctb-input-errors] 7, 8.
    if pad_to_length is not None:
        for record_index, length in enumerate(rows.lengths):
            if length > pad_to_length:
                raise ValueError(
                    f"sample_batch record {record_index}: length {length} does not fit pad_to_length={pad_to_length}"
                )
        width = pad_to_length
    else:
        if len(set(rows.lengths)) != 1:
            raise ValueError(f"sample_batch rows have different lengths {rows.lengths} and no pad_to_length is given")
        width = rows.lengths[0]
        if width < 2:
            raise ValueError(f"sample_batch record 0: length {width}, but rows need at least 2 tokens to shift")

    device = output_device(rows.given)
    sequence = width - 1
    same_length = all(length == width for length in rows.lengths)
    lengths = torch.tensor(rows.lengths, device=device)
    # First pad index of each row (unshifted): the padding suffix, grown by pad_to_length.
    first_pad = lengths - torch.tensor(rows.padding, device=device)

    tokens_flat = _as_batch(rows.tokens, device)
    if same_length:
        tokens = tokens_flat.view(batch, width)
    elif pad_token_id is None:  # unreachable: rows differ only with pad_to_length, which rules.py checks needs it
        raise ValueError("pad_token_id is required with pad_to_length, got None")
    else:
        fill = torch.full((batch, width), pad_token_id, dtype=torch.int64, device=device)
        tokens = _place(tokens_flat, lengths, batch, width, fill)

    # Positions [ctb-positions, unpacked-padding]: a record without positions counts 0.. over
    # its real tokens and restarts at 0 over its pad tail; the unpacked route's appended pad
    # tokens continue that tail. Given positions then overwrite their rows' front.
    columns = torch.arange(width, device=device)
    reads: list[torch.Tensor] = []
    if len(rows.with_positions) == batch and same_length:
        positions = _as_batch(rows.positions, device).view(batch, width)
        given: slice | torch.Tensor = slice(None)
    else:
        positions = torch.where(columns >= first_pad[:, None], columns - first_pad[:, None], columns)
        given = torch.tensor(rows.with_positions, dtype=torch.int64, device=device)
        if rows.with_positions:
            given_lengths = lengths[given]
            flat = _as_batch(rows.positions, device)
            placed = _place(flat, given_lengths, len(rows.with_positions), width, positions[given])
            positions[given] = placed
    # [ctb-input-errors] 10, read back with the outputs' host values below.
    bad_start = torch.zeros(batch, dtype=torch.bool, device=device)
    negative = torch.zeros(batch, dtype=torch.bool, device=device)
    bad_start[given] = positions[given, 0] != 0
    negative[given] = (positions[given] < 0).any(dim=1)
    reads += [bad_start, negative]

    # Shift, labels, masks, document ids [ctb-shift .. ctb-document-ids].
    index = columns[:sequence]
    input_ids = tokens[:, :sequence].clone()
    targets = tokens[:, 1:]
    target_is_padding = (index + 1) >= first_pad[:, None]
    if mask_segment_starts:
        target_is_padding = target_is_padding | (positions[:, 1:] == 0)
    labels = torch.where(target_is_padding, ignore_index, targets)
    padding_mask = index >= first_pad[:, None]
    position_ids = positions[:, :sequence].clone()
    document_ids = torch.where(padding_mask, 0, (position_ids == 0).cumsum(dim=1))
    selected = document_ids.clone()  # [ctb-attention-ids]

    if allow_cross_document_attention:  # [ctb-xdoc] via enable_xdoc_attention's semantics
        translated = document_ids > 0
        position_ids = xdoc_positions(position_ids[None], document_ids, translated, sequence + 1)[0]
        selected = translated.to(torch.int64)
        bound = getattr(packing_contract, "max_sequence_length", None)
        if _is_int(bound):
            reads.append(torch.where(translated, position_ids, -1).amax()[None])

    out: dict[str, Any] = {
        "input_ids": input_ids,
        "labels": labels,
        "position_ids": position_ids,
        "padding_mask": padding_mask,
        "document_ids": document_ids,
        "attention_document_ids": selected,
    }
    # The output route, from the selected ids [ctb-selected-ids, ctb-output-route].
    wants_metadata = output_format == "batched" and contract_requests_metadata(packing_contract)
    if output_format == "thd" or wants_metadata:
        counts, spans = monotone_row_spans(selected)
        reads.append(spans.amax()[None])
        if wants_metadata:
            reads.append(counts[:, 1:].amax()[None])

    # The one host read: validation flags, then the values shapes and ints need.
    values = torch.cat([r.to(torch.int64) for r in reads]).tolist()
    flags_start, flags_negative, rest = values[:batch], values[batch : 2 * batch], values[2 * batch :]
    if any(flags_start):
        raise ValueError(f"sample_batch record {flags_start.index(1)}: positions must start at 0")
    if any(flags_negative):
        raise ValueError(f"sample_batch record {flags_negative.index(1)}: positions must be >= 0")
    bound = getattr(packing_contract, "max_sequence_length", None)  # optional in a contract
    if allow_cross_document_attention and _is_int(bound):
        largest, rest = rest[0], rest[1:]
        if largest >= bound:
            raise xdoc_bound_error(largest, bound)

    if output_format == "thd":
        seq_lens, seq_lens_padded = thd_lengths_from_spans(counts, spans, rest[0])
        out.update(seq_lens=seq_lens, seq_lens_padded=seq_lens_padded, qkv_format="thd")
        return out
    out["_packed_seq_ids"] = selected.clone()
    mask_type = packing_contract.packed_mask_type
    if mask_type not in _PACKED_MASKS:
        raise ValueError(f"packing_contract.packed_mask_type {mask_type!r} is not one of {sorted(_PACKED_MASKS)}")
    out["attention_mask"] = _PACKED_MASKS[mask_type](selected)
    if wants_metadata:
        largest_id, max_seqlen = rest
        out.update(metadata_from_spans(selected, counts, spans, max(1, largest_id) + 1))
        out["max_seqlen"] = int(max_seqlen)
    return out
