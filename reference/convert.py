"""``convert_text_batch``: one Zephon ``SampleBatch`` of packed rows as the final ``TrainingBatch``.

Mirrors upstream ``nemo_automodel/components/datasets/zephon/loader.py`` (the
``zephon.loader`` page, docs/sources.md#seed-000).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from batchspec.reference.attention import adapt_model_inputs, enable_xdoc_attention
from batchspec.reference.contract import (
    INT64_MAX,
    INT64_MIN,
    BatchOutputFormat,
    PackedSequenceContract,
    TrainingBatch,
)
from batchspec.reference.output import (
    apply_batched_output,
    check_output_format,
    convert_batch_output,
)

__all__ = ["TOKEN_FIELD_CANDIDATES", "convert_text_batch"]

# [ctb-token-field] Zephon's own auto-detection order for the token field of a payload.
TOKEN_FIELD_CANDIDATES = ("input_ids", "tokens", "token_ids", "ids")


def convert_text_batch(
    sample_batch: Any,
    packing_contract: PackedSequenceContract,
    ignore_index: int,
    mask_segment_starts: bool,
    allow_cross_document_attention: bool,
    output_format: BatchOutputFormat = "batched",
    pad_to_length: int | None = None,
    pad_token_id: int | None = None,
) -> TrainingBatch:
    """Collate text rows into a ``TrainingBatch``.

    Implements [ctb-token-field, ctb-positions, ctb-boundaries-from-zeros,
    ctb-packed-needs-positions, ctb-extra-payload-ignored, ctb-shift, ctb-padding-labels,
    ctb-padding-mask, ctb-cross-document-targets, ctb-segment-starts, ctb-document-ids,
    ctb-attention-ids, ctb-xdoc, ctb-selected-ids, ctb-output-route, ctb-ignore-index,
    ctb-option-types, ctb-no-mutation, ctb-input-errors, unpacked-padding, unpacked-same-route,
    unpacked-errors, unpacked-pad-token-only-with-length, tb-shapes, tb-dtypes, tb-keys,
    tb-device, tb-layout, tb-no-aliasing, contract-once, contract-no-revalidation]; SPEC.md's section
    "``convert_text_batch``" is the definition, this docstring only the summary.

    Args:
        sample_batch: a ``zephon.SampleBatch`` of B records, each an unshifted 1-D token
            field of length L (``TOKEN_FIELD_CANDIDATES``), optional ``positions`` [L] and
            ``meta.padding_length``. Never modified.
        packing_contract: mask type and metadata request (batched output only) and an
            optional ``max_sequence_length`` (xdoc); read, never re-validated.
        ignore_index: the value of masked labels (an ``int``).
        mask_segment_starts: also mask labels whose target starts a subdocument (a ``bool``).
        allow_cross_document_attention: xdoc, via ``enable_xdoc_attention`` (a ``bool``).
        output_format: ``"batched"`` or ``"thd"``.
        pad_to_length: unpacked route: right-pad every row to this unshifted length.
        pad_token_id: the pad token of that route; ignored without ``pad_to_length``.

    Returns:
        A new mapping of tensors on the token fields' device when every record's token field
        is a tensor on one device, else on the CPU [tb-device]; S = L - 1 (or ``pad_to_length - 1``): int64
        ``input_ids``, ``labels``, ``position_ids``, ``document_ids``,
        ``attention_document_ids`` and bool ``padding_mask``, all ``[B, S]``; batched output
        adds ``_packed_seq_ids``, ``attention_mask`` (bool ``[B, 1, S, S]`` or int64
        ``[B, S]``) and, on request, ``packed_token_indices``, int32 ``cu_seqlens`` and int
        ``max_seqlen``; THD output adds int64 ``seq_lens``/``seq_lens_padded``
        ``[B, max spans]`` and ``qkv_format``.

    Raises:
        TypeError: a mistyped option or input field ([ctb-option-types],
            [ctb-input-errors] items 1, 4, 11, [unpacked-errors] items 1, 4).
        ValueError: a malformed batch, row or option ([ctb-input-errors] items 2, 3, 5-10,
            12, [ctb-token-field], [ctb-packed-needs-positions], [unpacked-errors] items 2,
            3, 5, [types-output-format], [xdoc-contract]).
    """
    _check_options(
        output_format, ignore_index, mask_segment_starts, allow_cross_document_attention, pad_to_length, pad_token_id
    )

    # 1. Read and check every row [ctb-input-errors].
    records = _records(sample_batch)
    rows = [_read_row(record, b) for b, record in enumerate(records)]

    # 2. Unpacked rows are right-padded to one length [unpacked-padding]; after this the
    # unpacked route is the packed route [unpacked-same-route].
    rows = _rows_of_one_length(rows, pad_to_length, pad_token_id)

    # 3. Shift, mask and number subdocuments on the original boundaries, on the token
    # fields' device [tb-device].
    batch = _shift_and_mask(rows, ignore_index, mask_segment_starts, _output_device(records))
    # 4. Attention membership [ctb-attention-ids], then the consumer's cross-document policy,
    # which changes only position_ids and attention_document_ids [ctb-xdoc].
    adapt_model_inputs(batch)
    if allow_cross_document_attention:
        enable_xdoc_attention(batch, packing_contract)
    # 5. The output format, built from the selected ids [ctb-selected-ids]: THD lengths, or
    # the batched mask/metadata route [ctb-output-route].
    convert_batch_output(batch, output_format)
    if output_format == "batched":
        apply_batched_output(batch, packing_contract)
    return batch


def _rows_of_one_length(rows: list[_Row], pad_to_length: int | None, pad_token_id: int | None) -> list[_Row]:
    """Step 2 of ``convert_text_batch``: with ``pad_to_length``, each row right-padded to it with
    ``pad_token_id`` [unpacked-padding]; without it, ``pad_token_id`` is ignored
    [unpacked-pad-token-only-with-length]. Either way the rows must then share one unshifted length
    of at least 2 tokens, else ``ValueError`` ([ctb-input-errors], [unpacked-errors])."""
    if pad_to_length is not None:
        assert pad_token_id is not None  # _check_options requires it with pad_to_length
        rows = [_pad_row(row, pad_to_length, pad_token_id, b) for b, row in enumerate(rows)]
    lengths = [len(row.tokens) for row in rows]
    if len(set(lengths)) != 1:
        raise ValueError(
            f"sample_batch rows must share one unshifted length without pad_to_length, got lengths {lengths}"
        )
    if lengths[0] < 2:
        raise ValueError(
            f"sample_batch record 0: rows must hold at least 2 unshifted tokens to shift, got {lengths[0]}"
        )
    return rows


def _check_options(
    output_format: Any,
    ignore_index: Any,
    mask_segment_starts: Any,
    allow_cross_document_attention: Any,
    pad_to_length: Any,
    pad_token_id: Any,
) -> None:
    """Check the options before any record is read [types-output-format, ctb-option-types,
    unpacked-errors] items 1-4: a mistyped option raises ``TypeError``, a bad value
    ``ValueError``, each naming the parameter."""
    check_output_format(output_format)
    # [ctb-option-types] a truthy string must never switch a policy on.
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        raise TypeError(f"ignore_index must be an int, got {type(ignore_index).__name__} {ignore_index!r}")
    for name, flag in (
        ("mask_segment_starts", mask_segment_starts),
        ("allow_cross_document_attention", allow_cross_document_attention),
    ):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__} {flag!r}")
    if pad_to_length is not None:
        if isinstance(pad_to_length, bool) or not isinstance(pad_to_length, int):
            raise TypeError(
                f"pad_to_length must be an int or None, got {type(pad_to_length).__name__} {pad_to_length!r}"
            )
        if pad_to_length < 2:
            raise ValueError(f"pad_to_length must be >= 2 unshifted tokens, got {pad_to_length}")
        if pad_token_id is None:
            raise ValueError("pad_token_id is required with pad_to_length, got None")
        if isinstance(pad_token_id, bool) or not isinstance(pad_token_id, int):
            raise TypeError(f"pad_token_id must be an int, got {type(pad_token_id).__name__} {pad_token_id!r}")


@dataclass
class _Row:
    """One unshifted row of a SampleBatch: tokens, positions and trailing padding count."""

    tokens: list[int]
    positions: list[int]
    padding_length: int


def _as_int_list(value: Any, field: str, row: int) -> list[int]:
    """A 1-D integer sequence (list, tuple, numpy array or tensor) as a list of Python ints
    [ctb-input-errors]: non-integers raise TypeError, other shapes or values outside int64
    raise ValueError, each naming the record and the field."""
    where = f"sample_batch record {row}: {field}"
    if isinstance(value, (torch.Tensor, np.ndarray)):
        try:
            tensor = torch.as_tensor(value)
        except TypeError as error:  # e.g. a numpy array of objects
            raise TypeError(f"{where} must hold integers, got a {value.dtype} array") from error
        if tensor.dtype.is_floating_point or tensor.dtype.is_complex or tensor.dtype == torch.bool:
            raise TypeError(f"{where} must hold integers, got dtype {tensor.dtype}")
        if tensor.ndim != 1:
            raise ValueError(f"{where} must be 1-D [sequence], got shape {tuple(tensor.shape)}")
        values = tensor.tolist()  # by value, whatever its strides or storage offset [tb-layout]
    elif isinstance(value, (list, tuple)):
        values = list(value)
    else:
        raise TypeError(f"{where} must be a 1-D list, numpy array or tensor of integers, got {type(value).__name__}")

    for i, x in enumerate(values):
        if isinstance(x, (list, tuple)):
            raise ValueError(f"{where} must be 1-D [sequence], got a nested sequence at index {i}")
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"{where} must hold integers, got {x!r} ({type(x).__name__}) at index {i}")
        if not INT64_MIN <= int(x) <= INT64_MAX:
            raise ValueError(f"{where} holds {int(x)} at index {i}, outside the int64 range")
    return [int(x) for x in values]


def _records(sample_batch: Any) -> Any:
    """The records of a ``zephon.SampleBatch`` [ctb-input-errors] items 1, 2.

    Raises:
        TypeError: ``sample_batch`` has no ``records``.
        ValueError: it holds no record.
    """
    records = getattr(sample_batch, "records", None)
    if records is None:
        raise TypeError(f"sample_batch must be a zephon.SampleBatch with .records, got {type(sample_batch).__name__}")
    if len(records) == 0:
        raise ValueError("sample_batch must hold at least one record, got 0")
    return records


def _token_field(payload: Any, row: int) -> str:
    """The name of a record's token field: the first of ``TOKEN_FIELD_CANDIDATES`` in its
    payload [ctb-token-field]; ``ValueError`` naming the candidates and the keys when none is."""
    field = next((name for name in TOKEN_FIELD_CANDIDATES if name in payload), None)
    if field is None:
        raise ValueError(
            f"sample_batch record {row}: payload has none of the token fields {list(TOKEN_FIELD_CANDIDATES)}; "
            f"keys are {sorted(payload)}"
        )
    return field


def _read_row(record: Any, row: int) -> _Row:
    """Read and check one record [ctb-token-field, ctb-positions, ctb-packed-needs-positions,
    ctb-extra-payload-ignored, ctb-input-errors]: only the token field, ``positions`` and
    ``meta.padding_length`` are read; other payload fields never reach an output."""
    payload = record.payload
    field = _token_field(payload, row)
    tokens = _as_int_list(payload[field], field, row)
    length = len(tokens)
    if length == 0:
        raise ValueError(f"sample_batch record {row}: {field} holds no token")

    # Positions: Zephon's per-subdocument reset positions, or one document when absent (filled
    # in below, once the padding is known).
    positions: list[int] | None = None
    if "positions" in payload:
        positions = _as_int_list(payload["positions"], "positions", row)
    else:
        packing = record.meta.tags.get("_packing_metadata") or {}
        if (packing.get("num_sequences") or 1) > 1:  # [ctb-packed-needs-positions]
            raise ValueError(
                f"sample_batch record {row}: meta says it packs {packing['num_sequences']} sequences, "
                "but the payload has no positions to find their boundaries"
            )
    if positions is not None:
        _check_positions(positions, length, row)

    padding_length = _read_padding_length(record, length, row)
    if positions is None:
        # [ctb-positions] One document over the real tokens, 0 .. L - n - 1; the pad tail
        # restarts at 0 (0 .. n - 1), as pack_flat numbers its padding.
        positions = list(range(length - padding_length)) + list(range(padding_length))
    return _Row(tokens=tokens, positions=positions, padding_length=padding_length)


def _check_positions(positions: list[int], length: int, row: int) -> None:
    """Given positions must have the token length, start at 0 and be >= 0 [ctb-input-errors]."""
    if len(positions) != length:
        raise ValueError(
            f"sample_batch record {row}: positions must have the token length {length}, got {len(positions)}"
        )
    if positions[0] != 0:
        raise ValueError(f"sample_batch record {row}: positions must start at 0, got {positions[0]}")
    negative = [i for i, p in enumerate(positions) if p < 0]
    if negative:
        raise ValueError(
            f"sample_batch record {row}: positions must be >= 0, got {positions[negative[0]]} at index {negative[0]}"
        )


def _read_padding_length(record: Any, length: int, row: int) -> int:
    """``meta.padding_length``: a trailing suffix of that many tokens, ``None`` meaning 0
    [ctb-input-errors, D-2]."""
    padding_length = record.meta.padding_length
    if padding_length is None:
        padding_length = 0
    if isinstance(padding_length, bool) or not isinstance(padding_length, int):
        raise TypeError(
            f"sample_batch record {row}: meta.padding_length must be an int or None, got {padding_length!r}"
        )
    if not 0 <= padding_length < length:
        raise ValueError(
            f"sample_batch record {row}: meta.padding_length must be in [0, {length - 1}] so that the row "
            f"keeps a real token, got {padding_length}"
        )
    return padding_length


def _pad_row(row: _Row, pad_to_length: int, pad_token_id: int, index: int) -> _Row:
    """Right-pad an unpacked row to ``pad_to_length`` unshifted tokens [unpacked-padding].

    The appended pad tokens extend the row's padding suffix; their positions continue the pad
    tail's restart (``0, 1, ...`` when the row had no padding), as ``pack_flat`` numbers it.
    """
    length = len(row.tokens)
    if length > pad_to_length:
        raise ValueError(f"sample_batch record {index}: {length} tokens do not fit pad_to_length={pad_to_length}")
    extra = pad_to_length - length
    first_tail_position = row.padding_length  # the existing tail holds 0 .. padding_length - 1
    return _Row(
        tokens=row.tokens + [pad_token_id] * extra,
        positions=row.positions + list(range(first_tail_position, first_tail_position + extra)),
        padding_length=row.padding_length + extra,
    )


def _output_device(records: Any) -> torch.device:
    """[tb-device] The device of the records' token fields when every one is a tensor on one
    device, else the CPU (Python lists and numpy arrays, or tensors on several devices)."""
    fields = [
        next(record.payload[name] for name in TOKEN_FIELD_CANDIDATES if name in record.payload) for record in records
    ]
    devices = {field.device for field in fields if isinstance(field, torch.Tensor)}
    if len(devices) == 1 and all(isinstance(field, torch.Tensor) for field in fields):
        return devices.pop()
    return torch.device("cpu")


def _shift_and_mask(
    rows: list[_Row], ignore_index: int, mask_segment_starts: bool, device: torch.device
) -> TrainingBatch:
    """Next-token shift, padding labels, padding mask, segment starts, document ids.

    [ctb-shift, ctb-padding-labels, ctb-padding-mask, ctb-positions, ctb-segment-starts,
    ctb-document-ids]
    """
    input_ids, labels, position_ids, padding_mask, document_ids = [], [], [], [], []
    for row in rows:
        sequence_length = len(row.tokens) - 1  # S = L - 1
        first_pad = len(row.tokens) - row.padding_length  # unshifted index of the first pad token
        row_inputs, row_labels, row_positions, row_padding, row_documents = [], [], [], [], []
        document = 0
        for i in range(sequence_length):
            # The input at i predicts the unshifted token at i + 1 [ctb-shift]; a target that
            # starts the next subdocument is kept unless masked [ctb-cross-document-targets].
            label = row.tokens[i + 1]
            # A target inside the padding suffix is excluded from loss, with exactly the given
            # ignore_index [ctb-padding-labels, ctb-ignore-index].
            if i + 1 >= first_pad:
                label = ignore_index
            # A target that starts a subdocument (its unshifted position is 0).
            if mask_segment_starts and row.positions[i + 1] == 0:
                label = ignore_index
            # Padding by position, never by token value.
            is_padding = i >= first_pad
            # Subdocuments are numbered 1, 2, ... at each position reset; padding is 0
            # [ctb-boundaries-from-zeros, ctb-document-ids].
            if row.positions[i] == 0:
                document += 1
            row_inputs.append(row.tokens[i])
            row_labels.append(label)
            row_positions.append(row.positions[i])
            row_padding.append(is_padding)
            row_documents.append(0 if is_padding else document)
        input_ids.append(row_inputs)
        labels.append(row_labels)
        position_ids.append(row_positions)
        padding_mask.append(row_padding)
        document_ids.append(row_documents)

    return {
        "input_ids": torch.tensor(input_ids, dtype=torch.int64, device=device),
        "labels": torch.tensor(labels, dtype=torch.int64, device=device),
        "position_ids": torch.tensor(position_ids, dtype=torch.int64, device=device),
        "padding_mask": torch.tensor(padding_mask, dtype=torch.bool, device=device),
        "document_ids": torch.tensor(document_ids, dtype=torch.int64, device=device),
    }
