"""The contract's rules that have no tensor work, written for ``vectorized`` from SPEC.md.

Public: another backend may reuse them (from ``vectorized``'s public API, as it may reuse any of
its functions). They are this backend's own code, not the reference's, so a differential run
against the reference checks them too.

* ``check_output_format`` [types-output-format], and ``check_convert_options``: the option
  checks of ``convert_text_batch`` in SPEC order [types-output-format, ctb-option-types,
  unpacked-errors] items 1-4;
* ``sample_records``, ``token_field_name``, ``output_device``: reading a ``zephon.SampleBatch``
  [ctb-input-errors] items 1-3, [ctb-token-field], [tb-device];
* ``xdoc_fields``, ``position_axes``: the field checks of ``enable_xdoc_attention`` [xdoc-errors];
* ``collater_pad_value``, ``is_list_field``, ``batched_field``, ``padded_width``, ``odd_width``,
  ``with_batch_axis``, ``thd_batch``: the canonical collaters' pad values [dcoll-pad-values],
  unpadded fields and row width [dcoll-fields] and THD key order [thdcoll-prepacked].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from batchspec.reference.contract import CROSS_ENTROPY_IGNORE_IDX

__all__ = [
    "PAD_TOKEN_IDS_KEY",
    "TOKEN_FIELDS",
    "batched_field",
    "check_convert_options",
    "check_output_format",
    "collater_pad_value",
    "is_list_field",
    "odd_width",
    "padded_width",
    "output_device",
    "position_axes",
    "sample_records",
    "thd_batch",
    "token_field_name",
    "with_batch_axis",
    "xdoc_fields",
]

# [ctb-token-field] The payload keys that may hold a record's tokens, in the order they are tried.
TOKEN_FIELDS = ("input_ids", "tokens", "token_ids", "ids")

# [dcoll-pad-values] The key of item 0 whose mapping overrides the pad values, per field.
PAD_TOKEN_IDS_KEY = "___PAD_TOKEN_IDS___"

# [dcoll-pad-values] Built-in pad values of the list fields; any other field pads with item 0's last element.
_BUILTIN_PADS = {"input_ids": 0, "labels": CROSS_ENTROPY_IGNORE_IDX, "attention_mask": 0, "loss_mask": 0}

_OUTPUT_FORMATS = ("batched", "thd")


def _is_plain_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def check_output_format(output_format: Any) -> None:
    """Reject an unknown output format [types-output-format].

    Raises:
        ValueError: ``output_format`` is not ``"batched"`` or ``"thd"``.
    """
    if not isinstance(output_format, str) or output_format not in _OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {list(_OUTPUT_FORMATS)}, got {output_format!r}")


def check_convert_options(
    output_format: Any,
    ignore_index: Any,
    mask_segment_starts: Any,
    allow_cross_document_attention: Any,
    pad_to_length: Any,
    pad_token_id: Any,
) -> None:
    """Check ``convert_text_batch``'s options before any record is read, in SPEC order
    [types-output-format, ctb-option-types, unpacked-errors] items 1-4.

    Raises:
        ValueError: ``output_format`` is not ``"batched"`` or ``"thd"``; ``pad_to_length`` < 2;
            ``pad_to_length`` given without ``pad_token_id``.
        TypeError: ``ignore_index`` / ``pad_to_length`` / ``pad_token_id`` not an int (bool is
            not), a flag not a bool (a truthy string never switches a policy on).
    """
    check_output_format(output_format)
    if not _is_plain_int(ignore_index):
        raise TypeError(f"ignore_index must be an int, got {_describe(ignore_index)}")
    for name, flag in (
        ("mask_segment_starts", mask_segment_starts),
        ("allow_cross_document_attention", allow_cross_document_attention),
    ):
        if type(flag) is not bool:
            raise TypeError(f"{name} must be a bool, got {_describe(flag)}")
    if pad_to_length is None:
        return
    if not _is_plain_int(pad_to_length):
        raise TypeError(f"pad_to_length must be an int or None, got {_describe(pad_to_length)}")
    if pad_to_length < 2:
        raise ValueError(f"pad_to_length must be >= 2 unshifted tokens, got {pad_to_length}")
    if pad_token_id is None:
        raise ValueError("pad_token_id is required with pad_to_length, got None")
    if not _is_plain_int(pad_token_id):
        raise TypeError(f"pad_token_id must be an int, got {_describe(pad_token_id)}")


def sample_records(sample_batch: Any) -> Any:
    """The records of a ``zephon.SampleBatch`` [ctb-input-errors] items 1, 2.

    Raises:
        TypeError: ``sample_batch`` has no ``records`` attribute (or it is None).
        ValueError: it holds no record.
    """
    records = getattr(sample_batch, "records", None)
    if records is None:
        raise TypeError(f"sample_batch must be a zephon.SampleBatch with .records, got {type(sample_batch).__name__}")
    if len(records) == 0:
        raise ValueError("sample_batch must hold at least one record, got 0")
    return records


def token_field_name(payload: Mapping[str, Any], record: int) -> str:
    """The first of ``TOKEN_FIELDS`` present in ``payload`` [ctb-token-field].

    Raises:
        ValueError: none is present; names the record, the candidates and the payload's keys.
    """
    for name in TOKEN_FIELDS:
        if name in payload:
            return name
    raise ValueError(
        f"sample_batch record {record}: payload has none of the token fields {list(TOKEN_FIELDS)}; "
        f"keys are {sorted(payload)}"
    )


def output_device(token_values: list[Any]) -> torch.device:
    """[tb-device] The outputs' device: the one device of the token fields when every one is a
    tensor on that device, else the CPU (lists, numpy arrays, or tensors on several devices)."""
    devices = {value.device for value in token_values if isinstance(value, torch.Tensor)}
    if len(devices) == 1 and all(isinstance(value, torch.Tensor) for value in token_values):
        return next(iter(devices))
    return torch.device("cpu")


def _dtype_or_type(value: Any) -> str:
    return str(value.dtype) if isinstance(value, torch.Tensor) else type(value).__name__


def xdoc_fields(batch: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """``document_ids`` and ``attention_document_ids`` of a batch for ``enable_xdoc_attention``,
    checked [xdoc-errors]: both int64 ``[batch, sequence]`` of one shape, ``position_ids`` present.

    Raises:
        ValueError: a field is missing, or the two ids differ in shape / are not 2-D.
        TypeError: an id field is not an int64 tensor.
    """
    for name in ("document_ids", "attention_document_ids", "position_ids"):
        if name not in batch:
            raise ValueError(f"enable_xdoc_attention: batch has no {name!r} entry (run adapt_model_inputs first)")
    ids = batch["document_ids"]
    attention_ids = batch["attention_document_ids"]
    for name, tensor in (("document_ids", ids), ("attention_document_ids", attention_ids)):
        if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.int64:
            raise TypeError(f"enable_xdoc_attention: {name} must be an int64 tensor, got {_dtype_or_type(tensor)}")
    if ids.ndim != 2 or attention_ids.shape != ids.shape:
        raise ValueError(
            "enable_xdoc_attention: document_ids and attention_document_ids must share one shape "
            f"[batch, sequence], got {tuple(ids.shape)} and {tuple(attention_ids.shape)}"
        )
    return ids, attention_ids


def position_axes(position_ids: Any, document_ids: torch.Tensor) -> torch.Tensor:
    """``position_ids`` (int64 ``[batch, sequence]`` or ``[axes, batch, sequence]``) as a
    ``[axes, batch, sequence]`` view [xdoc-errors].

    Raises:
        TypeError: not an int64 tensor.
        ValueError: any other shape.
    """
    if not isinstance(position_ids, torch.Tensor) or position_ids.dtype != torch.int64:
        raise TypeError(
            f"enable_xdoc_attention: position_ids must be an int64 tensor, got {_dtype_or_type(position_ids)}"
        )
    shape = tuple(document_ids.shape)
    if position_ids.ndim == 2 and tuple(position_ids.shape) == shape:
        return position_ids.unsqueeze(0)
    if position_ids.ndim == 3 and tuple(position_ids.shape[1:]) == shape and position_ids.shape[0] > 0:
        return position_ids
    raise ValueError(
        f"enable_xdoc_attention: position_ids must have shape [batch, sequence] {shape} or "
        f"[axes, batch, sequence] (axes, *{shape}), got {tuple(position_ids.shape)}"
    )


def collater_pad_value(key: str, overrides: Mapping[str, Any] | None) -> Any:
    """A list field's pad value [dcoll-pad-values]: item 0's override for ``key``, else the
    built-in pad, else None (the caller then pads with item 0's last element)."""
    if overrides is not None and key in overrides:
        return overrides[key]
    return _BUILTIN_PADS.get(key)


def padded_width(longest: int, pad_seq_len_divisible: Any) -> Any:
    """The collaters' row width [dcoll-fields, dcoll-divisible-zero]: ``longest`` rounded up to
    a multiple of ``pad_seq_len_divisible`` when that is truthy, of its absolute value when
    negative (a float divisor gives a float; 1 and -1 give ``longest``), ``longest`` itself for
    ``None`` and ``0``."""
    if pad_seq_len_divisible:
        divisor = abs(pad_seq_len_divisible)
        return math.ceil(longest / divisor) * divisor
    return longest


def odd_width(longest: int, pad_seq_len_divisible: Any) -> bool:
    """Whether ``padded_width`` is not an int of at least ``longest`` (a float divisor): the
    input upstream pads with its own list semantics."""
    width = padded_width(longest, pad_seq_len_divisible)
    return type(width) is not int or width < longest


def with_batch_axis(tensor: torch.Tensor) -> torch.Tensor:
    """A 1-D ``[N]`` tensor as a ``[1, N]`` view; any other tensor as it is."""
    return tensor.unsqueeze(0) if tensor.ndim == 1 else tensor


def _one_scalar(value: Any) -> bool:
    """One scalar per example [dcoll-fields]: a 0-D tensor or array, a numpy scalar, a Python
    int or float; never bool, str or bytes."""
    if isinstance(value, torch.Tensor):
        return value.ndim == 0
    if isinstance(value, (bool, str, bytes)):
        return False
    return isinstance(value, (int, float)) or getattr(value, "ndim", None) == 0


def _tensors_with_batch_axis(values: list[Any]) -> bool:
    return all(isinstance(value, torch.Tensor) and value.ndim > 0 for value in values)


def is_list_field(values: list[Any]) -> bool:
    """Whether one key's values are a list field the collater pads [dcoll-fields]: neither
    all tensors with a batch axis nor one scalar per item."""
    return not _tensors_with_batch_axis(values) and not all(_one_scalar(value) for value in values)


def batched_field(values: list[Any]) -> torch.Tensor | None:
    """One key's values batched without padding [dcoll-fields]: tensors with a batch axis
    (``[B_i, ...]``, a 1-D one read as ``[1, N]``) concatenated along it, or one scalar per item
    stacked to ``[B]`` (the dtype numpy infers); None for a list field (padded by the caller)."""
    if _tensors_with_batch_axis(values):
        return torch.cat([with_batch_axis(value) for value in values])
    if all(_one_scalar(value) for value in values):
        return torch.as_tensor(np.asarray(values))
    return None


def thd_batch(
    input_ids: torch.Tensor,
    labels: torch.Tensor,
    position_ids: torch.Tensor,
    seq_lens: torch.Tensor,
    seq_lens_padded: torch.Tensor,
) -> dict[str, Any]:
    """The THD collater's batch: exactly these keys in this order, ``qkv_format`` last
    [thdcoll-prepacked]."""
    return {
        "input_ids": input_ids,
        "labels": labels,
        "position_ids": position_ids,
        "seq_lens": seq_lens,
        "seq_lens_padded": seq_lens_padded,
        "qkv_format": "thd",
    }
