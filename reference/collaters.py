"""The canonical collaters: ``default_collater``, ``packed_sequence_thd_collater`` and
``pack_features_for_thd``.

Mirrors upstream ``nemo_automodel/components/datasets/utils.py`` (nemo-automodel 0.7.0),
which ``collate_datums`` delegates to (SPEC.md section 8). Outputs, key order, dtypes, error
types and messages are upstream's; the one deliberate difference is decision D-6, required by
[collaters-no-mutation]: these functions never modify the items they are given (upstream pops
``___PAD_TOKEN_IDS___`` from item 0 and rewrites items in THD synthesis mode; we work on
copies instead, and add a batch axis out of place).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from batchspec.reference.contract import CROSS_ENTROPY_IGNORE_IDX, THD_LENGTH_PAD

__all__ = ["PAD_TOKEN_IDS_KEY", "default_collater", "pack_features_for_thd", "packed_sequence_thd_collater"]

# [dcoll-pad-values] The per-batch pad override: item 0 may carry {key: pad id} under this key.
PAD_TOKEN_IDS_KEY = "___PAD_TOKEN_IDS___"

# [dcoll-pad-values] Built-in pad values of list fields; any other key pads with item 0's
# last element.
_DEFAULT_PAD_VALUES = {"labels": CROSS_ENTROPY_IGNORE_IDX, "attention_mask": 0, "loss_mask": 0, "input_ids": 0}

# [thdcoll-synthesized] Labels appended when synthesis mode right-pads a sequence.
_LABEL_PAD = CROSS_ENTROPY_IGNORE_IDX

# [thdcoll-prepacked] Unused slots of seq_lens / seq_lens_padded.
_SEQ_LENS_PAD = THD_LENGTH_PAD


def _pad_value(key: str, overrides: Mapping[str, Any] | None) -> Any:
    """The pad value of a list field: the override first, then the built-in default, else None
    (which means "item 0's last element") [dcoll-pad-values]."""
    if overrides is None:
        overrides = {}
    return overrides.get(key, _DEFAULT_PAD_VALUES.get(key))


def _is_scalar(value: Any) -> bool:
    """Whether a field value is one scalar per example [dcoll-fields].

    Scalars are 0-D tensors, Python ints and floats, and anything with ``ndim == 0`` (numpy
    scalars and 0-D arrays). ``bool`` (a Python ``int`` subclass), ``str`` and ``bytes`` are
    not scalars.
    """
    if isinstance(value, torch.Tensor):
        return value.ndim == 0
    if isinstance(value, (str, bytes, bool)):
        return False
    if isinstance(value, (int, float)):
        return True
    return getattr(value, "ndim", None) == 0


def _right_pad(rows: list[Any], pad: Any, pad_seq_len_divisible: int | None = None) -> list[Any]:
    """Right-pad every row to the longest row's length [dcoll-fields, dcoll-pad-values].

    The target length is rounded up to a multiple of ``pad_seq_len_divisible`` when that is
    truthy, of its absolute value when negative (the multiples of -2 are those of 2), so the
    width is never below the longest row. ``pad=None`` pads with item 0's last element (``IndexError`` when row 0 is empty).
    Rows are extended with ``row + [pad] * missing``, so they are expected to be lists.
    """
    width = max(len(row) for row in rows)
    if pad_seq_len_divisible:
        divisor = abs(pad_seq_len_divisible)
        width = math.ceil(width / divisor) * divisor
    if pad is None:
        pad = rows[0][-1]
    return [row + [pad] * (width - len(row)) for row in rows]


def _with_batch_axis(tensor: torch.Tensor) -> torch.Tensor:
    """A 1-D tensor ``[N]`` as ``[1, N]`` (out of place); any other tensor unchanged."""
    return tensor.unsqueeze(0) if tensor.ndim == 1 else tensor


def _stacked_field(values: list[Any]) -> torch.Tensor | None:
    """One key's values batched without padding [dcoll-fields]: pre-batched tensors
    ``[B_i, ...]`` concatenated along the batch axis, or one scalar per example stacked to a
    ``[B]`` tensor (dtype as numpy infers it); ``None`` for a list field, which the caller pads."""
    if all(isinstance(v, torch.Tensor) and v.ndim > 0 for v in values):
        return torch.cat([_with_batch_axis(v) for v in values], dim=0)
    if all(_is_scalar(v) for v in values):
        return torch.as_tensor(np.asarray(values))
    return None


def default_collater(
    batch: Sequence[Mapping[str, Any]],
    pad_seq_len_divisible: int | None = None,
) -> dict[str, Any]:
    """Pad and batch a list of examples [dcoll-fields, dcoll-divisible-zero, dcoll-pad-values,
    dcoll-padding-mask, tb-layout].

    Args:
        batch: ``B`` example mappings. The keys come from item 0, in its order (a later item's
            extra keys are ignored). Item 0 may carry ``___PAD_TOKEN_IDS___``, a ``{key: pad}``
            dict that overrides the built-in pad values; it is not an output key.
        pad_seq_len_divisible: when truthy, padded list fields are widened to a multiple of it,
            of its absolute value when negative (1 and -1 leave the longest length); ``0``, like ``None``, does not round
            [dcoll-divisible-zero].

    Returns:
        A new dict, per key in item 0's order:

        * all values tensors with ``ndim >= 1``: concatenated along dim 0, a 1-D value ``[N]``
          counting as ``[1, N]``; dtype, device and trailing axes kept (torch's type promotion
          when dtypes differ);
        * all values scalars (0-D tensors, Python/numpy scalars; not ``bool``/``str``):
          stacked to ``[B]`` through numpy (so Python floats give float64, ints int64);
        * otherwise (lists): right-padded to ``S`` (the longest, rounded up) and returned as
          int64 ``[B, S]``. Pads: override, else ``labels`` -100, ``attention_mask`` 0,
          ``loss_mask`` 0, ``input_ids`` 0, else item 0's last element.

        then ``padding_mask`` (bool): ``attention_mask == 0`` when that key exists, else
        ``input_ids == pad id`` (override or 0); absent when neither key exists.

    Raises:
        IndexError: ``batch`` is empty (or a list field without a pad value is empty on item 0).
        KeyError: a later item lacks one of item 0's keys.
        TypeError: a list field mixes in a value without a length (e.g. an ``int`` or ``bool``).
        RuntimeError: torch's errors for tensors that do not concatenate.

    The items are never modified (D-6); upstream pops ``___PAD_TOKEN_IDS___`` from item 0.
    """
    first = batch[0]  # an empty batch raises IndexError here, as upstream
    overrides = first.get(PAD_TOKEN_IDS_KEY)
    keys = [key for key in first if key != PAD_TOKEN_IDS_KEY]

    result: dict[str, Any] = {}
    for key in keys:
        values = [item[key] for item in batch]
        field = _stacked_field(values)
        if field is None:
            # Ragged sequences: right-pad and make an int64 [B, S] tensor.
            padded = _right_pad(values, _pad_value(key, overrides), pad_seq_len_divisible)
            field = torch.tensor(padded, dtype=torch.int64)
        result[key] = field

    # [dcoll-padding-mask] Prefer the real attention mask: comparing token values with the pad
    # id would also mark a real token that equals the pad id (pad == eos) as padding.
    if "attention_mask" in result:
        result["padding_mask"] = ~result["attention_mask"].bool()
    elif "input_ids" in result:
        input_ids_pad = _pad_value("input_ids", overrides) or 0
        result["padding_mask"] = (result["input_ids"] == input_ids_pad).bool()
    return result


def _synthesize_pack(item: Mapping[str, Any], width: int, input_ids_pad: int) -> dict[str, Any]:
    """One unpacked item as a single-sequence pre-packed record of ``width`` tokens [thdcoll-synthesized].

    Returns a new dict (the item is not modified): ``seq_lens = [sum(attention_mask)]`` (or the
    length without a mask), ``seq_lens_padded = [width]``, ``position_ids = 0 .. width - 1``;
    a shorter item's ``input_ids`` is right-padded with ``input_ids_pad`` and its ``labels``
    with -100 (``KeyError`` when it has none). ``attention_mask`` is dropped.
    """
    record = dict(item)
    length = len(record["input_ids"])
    if "attention_mask" in record:
        real_tokens = sum(record.pop("attention_mask"))
    else:
        real_tokens = length

    record["seq_lens"] = [real_tokens]
    record["seq_lens_padded"] = [width]
    record["position_ids"] = list(range(width))
    missing = width - length
    if missing > 0:
        record["input_ids"] = list(record["input_ids"]) + [input_ids_pad] * missing
        record["labels"] = list(record["labels"]) + [_LABEL_PAD] * missing
    return record


def _stack_rows(rows: list[Any]) -> torch.Tensor:
    """Stack per-item token sequences to ``[B, L]`` (``RuntimeError`` for different lengths)."""
    return _with_batch_axis(torch.stack([torch.as_tensor(row) for row in rows]))


def _thd_batch(
    input_ids: torch.Tensor,
    labels: torch.Tensor,
    position_ids: torch.Tensor,
    seq_lens: torch.Tensor,
    seq_lens_padded: torch.Tensor,
) -> dict[str, Any]:
    """The THD collater's output: exactly these keys, in this order [thdcoll-prepacked]."""
    return {
        "input_ids": input_ids,
        "labels": labels,
        "position_ids": position_ids,
        "seq_lens": seq_lens,
        "seq_lens_padded": seq_lens_padded,
        "qkv_format": "thd",
    }


def packed_sequence_thd_collater(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Batch pre-packed (or single-sequence) items in THD form [thdcoll-prepacked, thdcoll-synthesized,
    tb-layout].

    Args:
        batch: ``B`` item mappings. Pre-packed items (item 0 has ``seq_lens``) carry
            ``input_ids``, ``labels``, ``position_ids`` (all of one length ``L``) and
            ``seq_lens``/``seq_lens_padded`` (``K_i`` entries). Otherwise every item is one
            sequence (``input_ids``, ``labels``, optional ``attention_mask``) and is
            synthesized into a one-sequence pack of the longest item's length ``L``.
            ``___PAD_TOKEN_IDS___`` on item 0 overrides the ``input_ids`` pad (default 0).

    Returns:
        ``{}`` for an empty batch; otherwise exactly, in this order: ``input_ids``, ``labels``,
        ``position_ids`` (``[B, L]``, int64 for int lists), ``seq_lens``,
        ``seq_lens_padded`` (int64 ``[B, K]``, ``K = max K_i``, padded with -1000) and
        ``qkv_format = "thd"``. Every other key is dropped; there is no ``padding_mask``.
        Synthesized labels are not masked where ``attention_mask`` is 0.

    Raises:
        KeyError: a required key is missing (``labels`` included, in synthesis mode).
        RuntimeError: pre-packed items of different lengths (from ``torch.stack``).

    The items are never modified (D-6); upstream pops ``___PAD_TOKEN_IDS___`` from every item
    and rewrites them in synthesis mode.
    """
    if len(batch) == 0:
        return {}
    overrides = batch[0].get(PAD_TOKEN_IDS_KEY)

    if "seq_lens" in batch[0]:
        records = list(batch)
    else:
        # [thdcoll-synthesized] Each item is one sequence padded to the longest item.
        width = max(len(item["input_ids"]) for item in batch)
        input_ids_pad = _pad_value("input_ids", overrides) or 0
        records = [_synthesize_pack(item, width, input_ids_pad) for item in batch]

    # [thdcoll-prepacked] Token fields stack to [B, L]; lengths pad to the most sequences.
    input_ids = _stack_rows([record["input_ids"] for record in records])
    labels = _stack_rows([record["labels"] for record in records])
    position_ids = _stack_rows([record["position_ids"] for record in records])
    seq_lens = torch.tensor(_right_pad([r["seq_lens"] for r in records], _SEQ_LENS_PAD), dtype=torch.int64)
    seq_lens_padded = torch.tensor(
        _right_pad([r["seq_lens_padded"] for r in records], _SEQ_LENS_PAD), dtype=torch.int64
    )
    return _thd_batch(input_ids, labels, position_ids, seq_lens, seq_lens_padded)


def pack_features_for_thd(
    features: Sequence[Mapping[str, Any]], *, ignore_index: int = CROSS_ENTROPY_IGNORE_IDX
) -> dict[str, list]:
    """Join single-sequence features end to end into one pre-packed record [pack-features, pack-errors,
    tb-layout].

    Args:
        features: ``N >= 1`` mappings with ``input_ids`` (a non-empty sequence, ``T_i``
            entries) and optionally ``labels`` (``T_i`` entries). Lists or 1-D tensors (a
            tensor contributes its 0-D elements).
        ignore_index: the label of every position of a feature without ``labels``.

    Returns:
        A new dict of plain lists: ``input_ids`` and ``labels`` (``sum(T_i)`` entries, features
        in order), ``position_ids`` (``0 .. T_i - 1`` per feature), ``seq_lens`` (the ``T_i``)
        and ``seq_lens_padded`` (a copy of ``seq_lens``: no separators).

    Raises:
        ValueError: ``"pack_features_for_thd requires at least one feature"`` for no feature;
            ``"cannot pack an empty sequence"`` for an empty ``input_ids``;
            ``"labels length X does not match input_ids length Y"``.
    """
    if not features:
        raise ValueError("pack_features_for_thd requires at least one feature")

    input_ids: list = []
    labels: list = []
    position_ids: list[int] = []
    seq_lens: list[int] = []
    for feature in features:
        ids = list(feature["input_ids"])
        if not ids:
            raise ValueError("cannot pack an empty sequence")
        if "labels" in feature:
            feature_labels = list(feature["labels"])
        else:
            feature_labels = [ignore_index] * len(ids)  # no labels: no loss on this feature
        if len(feature_labels) != len(ids):
            raise ValueError(f"labels length {len(feature_labels)} does not match input_ids length {len(ids)}")

        input_ids += ids
        labels += feature_labels
        position_ids += range(len(ids))  # positions restart at every feature
        seq_lens.append(len(ids))

    return {
        "input_ids": input_ids,
        "labels": labels,
        "position_ids": position_ids,
        "seq_lens": seq_lens,
        "seq_lens_padded": list(seq_lens),
    }
