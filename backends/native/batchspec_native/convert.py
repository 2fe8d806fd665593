"""``convert_text_batch`` (SPEC.md section 4) with its hot path in native code.

Python walks the B record objects once (the token field, ``positions``, ``padding_length``,
the lengths) and allocates every buffer; the library then does, per row:

* ingest: each list / tuple field is read element by element through CPython's C API into
  the row of a ``[B, L]`` int64 buffer, with the exact type checks of [ctb-input-errors]
  items 4-6 in the same pass (an exact ``int`` is read; a ``bool``, a nested sequence or an int
  outside int64 is an error). numpy arrays and tensors are copied in by their dtype;
* one pass over the row: the unpacked route's padding, default positions, the positions
  checks, shift, labels, ``padding_mask``, ``document_ids``, the selected ids and xdoc's
  translated positions;
* the output route from the selected ids: the ``block_causal`` mask, the metadata bundle
  (``build_packed_sequence_metadata``'s kernel) or the THD lengths.

Delegated on purpose (named, not a fallback): a list element that is not exactly an ``int``
(an ``int`` subclass, a numpy integer) is classified and converted in Python
(``_ingest_other``); that is the only Python per-token work. Outputs are built on the CPU and
moved to the token fields' device when they are all tensors on one accelerator [tb-device].
"""

from __future__ import annotations

import array
import ctypes
from typing import Any

import numpy as np
import torch

from batchspec_native._library import (
    CONVERT_OK,
    CONVERT_POSITIONS_START,
    INGEST_BOOL,
    INGEST_NESTED,
    INGEST_OK,
    INGEST_OVERFLOW,
    LIBRARY,
    SOURCE_I32,
    SOURCE_I64,
    SOURCE_SCRATCH,
)

__all__ = ["convert_text_batch"]

TOKEN_FIELDS = ("input_ids", "tokens", "token_ids", "ids")  # Zephon's detection order [ctb-token-field]
OUTPUT_FORMATS = ("batched", "thd")  # [types-output-format]
MASK_TYPES = ("block_causal", "document_ids")  # [types-mask-type]
INT64_MAX = 2**63 - 1
_WIDE_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_options(output_format, ignore_index, mask_segment_starts, cross_document, pad_to_length, pad_token_id):
    """[types-output-format], [ctb-option-types], [unpacked-errors] items 1-4."""
    if not isinstance(output_format, str) or output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {list(OUTPUT_FORMATS)}, got {output_format!r}")
    if not _is_int(ignore_index):
        raise TypeError(f"ignore_index must be an int, got {type(ignore_index).__name__}")
    if not isinstance(mask_segment_starts, bool):
        raise TypeError(f"mask_segment_starts must be a bool, got {type(mask_segment_starts).__name__}")
    if not isinstance(cross_document, bool):
        raise TypeError(f"allow_cross_document_attention must be a bool, got {type(cross_document).__name__}")
    if pad_to_length is not None:
        if not _is_int(pad_to_length):
            raise TypeError(f"pad_to_length must be an int, got {type(pad_to_length).__name__}")
        if pad_to_length < 2:
            raise ValueError(f"pad_to_length must be >= 2, got {pad_to_length}")
        if pad_token_id is None:
            raise ValueError("pad_token_id is required when pad_to_length is set")
        if not _is_int(pad_token_id):
            raise TypeError(f"pad_token_id must be an int, got {type(pad_token_id).__name__}")


def _requests_metadata(contract: Any) -> bool:
    """The contract's metadata request [contract-metadata-flag]."""
    for name in ("return_packed_sequence_metadata", "requires_packed_sequence_metadata"):
        if hasattr(contract, name):
            value = getattr(contract, name)
            if not isinstance(value, bool):
                raise TypeError(f"packing_contract.{name} must be a bool, got {value!r}")
            return value
    raise TypeError("packing_contract has no return_packed_sequence_metadata")


def _where(index: int, field: str) -> str:
    return f"sample_batch record {index}: field {field}"


def _field_length(value: Any, field: str, index: int) -> int:
    """The length of a 1-D integer field; raises [ctb-input-errors] items 4, 5 for arrays and
    tensors (list elements are checked by the ingest)."""
    if isinstance(value, torch.Tensor):
        if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
            raise TypeError(f"{_where(index, field)}: expected integers, got a {value.dtype} tensor")
        if value.ndim != 1:
            raise ValueError(f"{_where(index, field)}: expected 1-D [sequence], got shape {tuple(value.shape)}")
        return int(value.shape[0])
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise TypeError(f"{_where(index, field)}: expected integers, got a {value.dtype} array")
        if value.ndim != 1:
            raise ValueError(f"{_where(index, field)}: expected 1-D [sequence], got shape {value.shape}")
        return int(value.shape[0])
    if isinstance(value, (list, tuple)):
        return len(value)
    raise TypeError(
        f"{_where(index, field)}: expected a 1-D list, numpy array or tensor of integers, got {type(value).__name__}"
    )


def _ingest_other(value: Any, field: str, index: int, row: np.ndarray) -> None:
    """A list / tuple the native ingest handed back (an element that is not exactly an int):
    classified here [ctb-input-errors] items 4-6, then written into ``row``."""
    for element in value:
        if isinstance(element, (list, tuple, np.ndarray)):
            raise ValueError(f"{_where(index, field)}: expected 1-D [sequence], got a nested {type(element).__name__}")
        if isinstance(element, (bool, np.bool_)) or not isinstance(element, (int, np.integer)):
            raise TypeError(
                f"{_where(index, field)}: expected integers, got an element of type {type(element).__name__}"
            )
    try:
        row[:] = np.frombuffer(array.array("q", [int(element) for element in value]), dtype=np.int64)
    except OverflowError:
        raise ValueError(f"{_where(index, field)}: holds a value outside the int64 range") from None


_DIRECT_TORCH = {torch.int64: SOURCE_I64, torch.int32: SOURCE_I32}
_DIRECT_NUMPY = {np.dtype(np.int64): SOURCE_I64, np.dtype(np.int32): SOURCE_I32}


def _direct_source(value: Any) -> tuple[int, int, int] | None:
    """``(pointer, element stride, kind)`` of a CPU int64 / int32 tensor or native-endian numpy
    array with a positive stride: the library reads it in place (no copy in Python); None for
    any other value."""
    if isinstance(value, torch.Tensor):
        kind = _DIRECT_TORCH.get(value.dtype)
        if kind is not None and value.device.type == "cpu" and value.stride(0) >= 1:
            return value.data_ptr(), value.stride(0), kind
        return None
    if isinstance(value, np.ndarray):
        kind = _DIRECT_NUMPY.get(value.dtype)
        if kind is not None and value.strides[0] >= 1 and value.strides[0] % value.itemsize == 0:
            return value.ctypes.data, value.strides[0] // value.itemsize, kind
    return None


def _ingest(value: Any, field: str, index: int, buffer: torch.Tensor, host: np.ndarray, length: int) -> tuple:
    """The row source of the record's field (``bs_convert_rows``'s ``[pointer, stride, kind]``):
    an int64 / int32 tensor or array is read in place by the library; anything else is written
    here into row ``index`` of ``buffer`` (``host`` is its numpy view)."""
    direct = _direct_source(value)
    if direct is not None:
        return direct
    row = host[index, :length]
    if isinstance(value, torch.Tensor):
        if value.dtype in _WIDE_UNSIGNED:  # torch has few kernels for these: read them as numpy
            value = value.cpu().numpy()
        else:
            buffer[index, :length].copy_(value)
            return _SCRATCH
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "u" and length and int(value.max()) > INT64_MAX:
            raise ValueError(f"{_where(index, field)}: holds {int(value.max())}, outside the int64 range")
        row[:] = value
        return _SCRATCH
    at = ctypes.c_ssize_t(0)
    status = LIBRARY.bs_ingest_sequence(value, length, row.ctypes.data, ctypes.addressof(at))
    if status == INGEST_OK:
        return _SCRATCH
    if status == INGEST_BOOL:
        raise TypeError(f"{_where(index, field)}: expected integers, element {at.value} is a bool")
    if status == INGEST_NESTED:
        raise ValueError(f"{_where(index, field)}: expected 1-D [sequence], element {at.value} is a sequence")
    if status == INGEST_OVERFLOW:
        raise ValueError(f"{_where(index, field)}: element {at.value} is outside the int64 range")
    _ingest_other(value, field, index, row)  # a subclass of list / tuple, or an element of another type
    return _SCRATCH


_SCRATCH = (0, 1, SOURCE_SCRATCH)


class _Record:
    __slots__ = ("field", "tokens", "positions", "length", "padding")

    def __init__(self, field: str, tokens: Any, positions: Any, length: int, padding: int) -> None:
        self.field, self.tokens, self.positions, self.length, self.padding = field, tokens, positions, length, padding


def _read_record(record: Any, index: int) -> _Record:
    """One record's fields and lengths [ctb-token-field, ctb-packed-needs-positions,
    ctb-input-errors] items 3, 9, 11, 12."""
    payload = record.payload
    field = next((name for name in TOKEN_FIELDS if name in payload), None)
    if field is None:
        raise ValueError(f"sample_batch record {index}: the payload has no token field (one of {list(TOKEN_FIELDS)})")
    tokens = payload[field]
    length = _field_length(tokens, field, index)
    if length == 0:
        raise ValueError(f"sample_batch record {index}: field {field} holds no token")
    positions = payload.get("positions") if "positions" in payload else None
    if "positions" in payload:
        if _field_length(positions, "positions", index) != length:
            raise ValueError(
                f"sample_batch record {index}: positions has length {_field_length(positions, 'positions', index)}, "
                f"the token field {field} has length {length}"
            )
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
            f"sample_batch record {index}: padding_length {padding} is outside [0, {length - 1}] (length {length})"
        )
    return _Record(field, tokens, positions if "positions" in payload else None, length, padding)


def _output_device(records: list[_Record]) -> torch.device:
    """[tb-device]: the token fields' device when all are tensors on one device, else the CPU."""
    devices = {r.tokens.device if isinstance(r.tokens, torch.Tensor) else None for r in records}
    if len(devices) == 1 and None not in devices:
        return devices.pop()
    return torch.device("cpu")


def convert_text_batch(
    sample_batch: Any,
    packing_contract: Any,
    ignore_index: int,
    mask_segment_starts: bool,
    allow_cross_document_attention: bool,
    output_format: str = "batched",
    pad_to_length: int | None = None,
    pad_token_id: int | None = None,
) -> dict:
    """A ``zephon.SampleBatch`` of B records (token field and optional ``positions`` of length
    L, ``meta.padding_length``) as a ``TrainingBatch``: int64 ``[B, S]`` ``input_ids``,
    ``labels``, ``position_ids``, ``document_ids``, ``attention_document_ids``, bool
    ``padding_mask``, S = L - 1 (``pad_to_length - 1`` on the unpacked route), plus the route's
    keys: ``"batched"``: ``_packed_seq_ids``, ``attention_mask`` (bool ``[B, 1, S, S]`` or int64
    ``[B, S]``) and, when the contract requests it, ``packed_token_indices``, int32
    ``cu_seqlens`` and ``max_seqlen``; ``"thd"``: int64 ``seq_lens`` / ``seq_lens_padded``
    ``[B, max spans]`` and ``qkv_format``. SPEC.md section 4 and section 3's table give every
    clause ([ctb-*], [batched-*], [thd-lengths], [unpacked-*], [tb-*]).

    Raises ``TypeError`` / ``ValueError`` for the faults of [ctb-option-types],
    [types-output-format], [unpacked-errors], [ctb-input-errors] (naming the record and field),
    [ctb-packed-needs-positions], an unknown ``packed_mask_type`` [types-mask-type] and the xdoc
    bound [xdoc-contract]. No input is modified; every output is a new tensor.
    """
    _check_options(
        output_format, ignore_index, mask_segment_starts, allow_cross_document_attention, pad_to_length, pad_token_id
    )
    if not hasattr(sample_batch, "records"):
        raise TypeError(f"sample_batch must have records (a zephon.SampleBatch), got {type(sample_batch).__name__}")
    records = [_read_record(record, index) for index, record in enumerate(sample_batch.records)]
    if not records:
        raise ValueError("sample_batch holds no record")
    width = _row_width([r.length for r in records], pad_to_length)
    batch_metadata = output_format == "batched" and _requests_metadata(packing_contract)
    if output_format == "batched" and packing_contract.packed_mask_type not in MASK_TYPES:
        raise ValueError(
            f"packing_contract.packed_mask_type {packing_contract.packed_mask_type!r} is not one of {list(MASK_TYPES)}"
        )

    mask_type = packing_contract.packed_mask_type if output_format == "batched" else None
    rows = _ingest_rows(records, width)
    out, extras = _allocate_outputs(len(records), width, mask_type, batch_metadata)
    pad_value = 0 if pad_token_id is None or pad_to_length is None else pad_token_id
    largest, max_seqlen, largest_id = _convert_rows(
        rows, out, extras, ignore_index, mask_segment_starts, allow_cross_document_attention, pad_value
    )
    if allow_cross_document_attention:
        bound = getattr(packing_contract, "max_sequence_length", None)
        if _is_int(bound) and largest >= bound:
            raise ValueError(
                f"max_sequence_length {bound} is exceeded: a translated xdoc position is {largest} "
                f"(positions must stay below max_sequence_length)"
            )

    if output_format == "thd":
        _add_thd_lengths(out)
    else:
        _add_batched_fields(out, extras, mask_type, batch_metadata, width, largest_id, max_seqlen)

    device = _output_device(records)
    if device.type != "cpu":
        out = {key: value.to(device) if isinstance(value, torch.Tensor) else value for key, value in out.items()}
    return out


def _row_width(lengths: list[int], pad_to_length: int | None) -> int:
    """The rows' common length L: ``pad_to_length`` on the unpacked route (every row fits it,
    [unpacked-errors]), else the one length of all rows, at least 2 ([ctb-input-errors])."""
    if pad_to_length is not None:
        for index, length in enumerate(lengths):
            if length > pad_to_length:
                raise ValueError(
                    f"sample_batch record {index}: length {length} does not fit pad_to_length={pad_to_length}"
                )
        return pad_to_length
    if len(set(lengths)) != 1:
        raise ValueError(f"sample_batch rows have different lengths {lengths} and no pad_to_length is given")
    width = lengths[0]
    if width < 2:
        raise ValueError(f"sample_batch record 0: length {width}, but rows need at least 2 tokens to shift")
    return width


class _Rows:
    """The records ingested into ``[B, L]`` int64 ``tokens`` / ``positions`` buffers, with the
    per-row source descriptors, lengths and padding the library reads."""

    def __init__(self, records: list[_Record], width: int) -> None:
        batch = len(records)
        self.batch, self.width = batch, width
        self.tokens = torch.empty((batch, width), dtype=torch.int64)
        self.positions = torch.empty((batch, width), dtype=torch.int64)
        self.has_positions = bytearray(batch)
        self.token_sources: list[int] = []
        self.position_sources: list[int] = []
        self.lengths = [r.length for r in records]
        self.padding = [r.padding for r in records]


def _ingest_rows(records: list[_Record], width: int) -> _Rows:
    """Each record's token field and ``positions`` (when given) read into the row buffers
    ([ctb-input-errors] items 4-6 raised while reading)."""
    rows = _Rows(records, width)
    host_tokens, host_positions = rows.tokens.numpy(), rows.positions.numpy()
    for index, record in enumerate(records):
        rows.token_sources.extend(_ingest(record.tokens, record.field, index, rows.tokens, host_tokens, record.length))
        if record.positions is not None:
            rows.position_sources.extend(
                _ingest(record.positions, "positions", index, rows.positions, host_positions, record.length)
            )
            rows.has_positions[index] = 1
        else:
            rows.position_sources.extend(_SCRATCH)
    return rows


_FIELD_NAMES = ("input_ids", "labels", "position_ids", "padding_mask", "document_ids", "attention_document_ids")
# the batched route's copies of the selected ids and metadata, written in the same row pass
_EXTRA_NAMES = ("_packed_seq_ids", "attention_mask", "packed_token_indices", "cu_rows", "spans")


def _allocate_outputs(
    batch: int, width: int, mask_type: str | None, batch_metadata: bool
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The ``[B, S]`` fields every route writes, and the batched route's extra buffers (those
    its contract asks for), all uninitialised: the library's row pass fills them."""
    sequence = width - 1
    out: dict[str, Any] = {
        name: torch.empty((batch, sequence), dtype=torch.bool if name == "padding_mask" else torch.int64)
        for name in _FIELD_NAMES
    }
    extras: dict[str, torch.Tensor] = {}
    if mask_type is not None:  # the batched route
        extras["_packed_seq_ids"] = torch.empty((batch, sequence), dtype=torch.int64)
        if mask_type == "document_ids":
            extras["attention_mask"] = torch.empty((batch, sequence), dtype=torch.int64)
        if batch_metadata:
            extras["packed_token_indices"] = torch.empty((batch, sequence), dtype=torch.int64)
            extras["cu_rows"] = torch.empty((batch, width), dtype=torch.int32)
            extras["spans"] = torch.empty(batch, dtype=torch.int64)
    return out, extras


def _convert_rows(
    rows: _Rows,
    out: dict[str, Any],
    extras: dict[str, torch.Tensor],
    ignore_index: int,
    mask_segment_starts: bool,
    allow_cross_document_attention: bool,
    pad_value: int,
) -> tuple[int, int, int]:
    """The library's row pass over every row (SPEC section 4's steps); raises the positions
    faults of [ctb-packed-needs-positions] naming the row. Returns ``(largest translated xdoc
    position, max_seqlen, largest selected id)``."""
    batch, width = rows.batch, rows.width
    pointers = (ctypes.c_void_p * 11)(
        *(out[name].data_ptr() for name in _FIELD_NAMES),
        *(extras[name].data_ptr() if name in extras else None for name in _EXTRA_NAMES),
    )
    results = (ctypes.c_int64 * 4)(-1, -1, 0, 0)
    status = LIBRARY.bs_convert_rows(
        batch,
        width,
        rows.tokens.data_ptr(),
        rows.positions.data_ptr(),
        (ctypes.c_int64 * (3 * batch))(*rows.token_sources),
        (ctypes.c_int64 * (3 * batch))(*rows.position_sources),
        (ctypes.c_uint8 * batch).from_buffer(rows.has_positions),
        (ctypes.c_int64 * batch)(*rows.lengths),
        (ctypes.c_int64 * batch)(*rows.padding),
        ignore_index,
        int(mask_segment_starts),
        int(allow_cross_document_attention),
        pad_value,
        pointers,
        results,
    )
    largest, bad_row, max_seqlen, largest_id = results
    if status != CONVERT_OK:
        problem = "must start at 0" if status == CONVERT_POSITIONS_START else "must be >= 0 (holds a negative entry)"
        raise ValueError(f"sample_batch record {bad_row}: positions {problem}")
    return largest, max_seqlen, largest_id


def _add_thd_lengths(out: dict[str, Any]) -> None:
    """[thd-lengths, thd-qkv-format]: ``seq_lens`` / ``seq_lens_padded`` ``[B, max spans]`` of the selected ids."""
    selected = out["attention_document_ids"]
    batch, sequence = selected.shape
    spans = LIBRARY.bs_max_spans(selected.data_ptr(), batch, sequence)
    seq_lens = torch.empty((batch, spans), dtype=torch.int64)
    seq_lens_padded = torch.empty((batch, spans), dtype=torch.int64)
    LIBRARY.bs_thd_lengths(selected.data_ptr(), batch, sequence, spans, seq_lens.data_ptr(), seq_lens_padded.data_ptr())
    out.update(seq_lens=seq_lens, seq_lens_padded=seq_lens_padded, qkv_format="thd")


def _add_batched_fields(
    out: dict[str, Any],
    extras: dict[str, torch.Tensor],
    mask_type: str | None,
    batch_metadata: bool,
    width: int,
    largest_id: int,
    max_seqlen: int,
) -> None:
    """[batched-packed-seq-ids, batched-block-causal, batched-document-ids-mask, batched-metadata]."""
    selected = out["attention_document_ids"]
    batch, sequence = selected.shape
    out["_packed_seq_ids"] = extras["_packed_seq_ids"]
    if mask_type == "block_causal":
        mask = torch.empty((batch, 1, sequence, sequence), dtype=torch.bool)
        LIBRARY.bs_block_causal(selected.data_ptr(), batch, sequence, mask.data_ptr())
        out["attention_mask"] = mask
    else:
        out["attention_mask"] = extras["attention_mask"]
    if batch_metadata:
        # build_packed_sequence_metadata of the selected ids: cu_seqlens is
        # [B, max(1, largest id) + 1], -1 past each row's spans [meta-cu-seqlens]
        cu_width = max(1, largest_id) + 1
        cu_seqlens = torch.empty((batch, cu_width), dtype=torch.int32)
        LIBRARY.bs_cu_from_rows(
            extras["cu_rows"].data_ptr(), width, extras["spans"].data_ptr(), batch, cu_width, cu_seqlens.data_ptr()
        )
        out.update(
            packed_token_indices=extras["packed_token_indices"], cu_seqlens=cu_seqlens, max_seqlen=int(max_seqlen)
        )
