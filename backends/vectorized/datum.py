"""``Datum`` and a vectorized ``collate_datums`` (SPEC.md section 8, "``Datum`` and the canonical
collaters").

``Datum`` is the reference's class itself (``batchspec.reference.datum.Datum``: construction is cheap and
its behaviour is the contract's). ``collate_datums`` gives exactly the reference's batch -- keys,
order, values, dtypes, devices, errors and their order -- but builds it straight from the datum
tensors with whole-batch operations, never through ``Datum.to_features`` lists: one
``torch.cat`` per field (on the datums' device), the zero-weight labels with one comparison and
one masked assignment, and every padded ``[B, W]`` field with one preallocated array and one
boolean-mask assignment. Token fields are assembled on the CPU with numpy (where the contract
puts them); side inputs on an accelerator, or that need autograd, stay in torch on their device.
Inputs the fast path does not handle (non-integer token tensors, target_tokens of another
length, weights of another shape, an out-of-range or non-int ``ignore_index``, a non-int
divisor) and every failing call are computed by ``batchspec.reference.datum.collate_datums``, which raises
the error [collate-errors] fixes, in its order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from batchspec.backends.vectorized.paths import Delegate, record
from batchspec.reference import datum as _reference
from batchspec.reference.contract import CROSS_ENTROPY_IGNORE_IDX, INT64_MAX, INT64_MIN
from batchspec.reference.datum import Datum

__all__ = ["CROSS_ENTROPY_IGNORE_IDX", "Datum", "collate_datums"]

# Token dtypes read exactly as ``tolist()`` reads them (uint16/32/64 and bool are left to the
# reference: bool lists stay bool in packed mode, and torch supports the wide unsigned types barely).
_INT_DTYPES = frozenset({torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8})


def _fits(value: int, dtype: torch.dtype) -> bool:
    """Whether ``masked_fill(..., value)`` on a ``dtype`` tensor stores ``value`` unchanged."""
    info = torch.iinfo(dtype)
    return info.min <= value <= info.max


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """The values of ``tensor`` (any device) as a CPU numpy array (shares memory when it can)."""
    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:  # numpy has no bfloat16; float32 holds every value
        tensor = tensor.to(torch.float32)
    return tensor.numpy()


def _labels(lfis: list[dict], lengths: list[int], ignore_index: int) -> np.ndarray:
    """All datums' labels concatenated, int64 ``[sum(T_i)]`` on the CPU: their ``target_tokens``
    with ``ignore_index`` wherever ``weights == 0`` (a scalar or length-1 ``weights``
    broadcasts over its datum) [collate-weights, datum-to-features].

    ``Delegate`` unless every ``target_tokens`` is a 1-D integer tensor of its datum's length
    and every ``weights`` is a 0-D, length-1 or length-``T`` tensor on the targets' device.
    """
    targets: list[torch.Tensor] = []
    weights: list[torch.Tensor] = []
    for lfi, length in zip(lfis, lengths):
        target = lfi["target_tokens"]
        if target.ndim != 1 or target.shape[0] != length:
            raise Delegate("targets-of-another-shape")
        if target.dtype in _INT_DTYPES:
            is_int = True
        elif length == 0 and target.dtype in (torch.float32, torch.float64):
            is_int = False  # ``Datum([], {"target_tokens": []})`` holds an empty float32: no label
        else:
            raise Delegate("non-integer-targets")
        if "weights" in lfi:
            weight = lfi["weights"]
            if weight.device != target.device or (is_int and not _fits(ignore_index, target.dtype)):
                # the reference's per-datum masked_fill decides (error or wrap-around)
                raise Delegate("weights-elsewhere-or-ignore-index-overflow")
            if weight.ndim == 0 or (weight.ndim == 1 and weight.shape[0] == 1):
                weight = weight.reshape(1).expand(length)  # broadcast, as masked_fill does
            elif weight.ndim != 1 or weight.shape[0] != length:
                raise Delegate(
                    "weights-of-another-shape"
                )  # does not broadcast (RuntimeError) or broadcasts to another shape
            if length:
                weights.append(weight)
        if length:
            targets.append(target)
    if not targets:
        return np.zeros(0, dtype=np.int64)
    # A new array (torch.cat copies; int promotion keeps every value), written in place below.
    labels = _to_numpy(torch.cat(targets)).astype(np.int64, copy=False)
    if weights:
        if len({weight.dtype for weight in weights}) == 1:
            zero = _to_numpy(torch.cat(weights)) == 0
        else:  # compare each in its own dtype, as the reference does
            zero = _to_numpy(torch.cat([weight == 0 for weight in weights]))
        labels[zero] = ignore_index
    return labels


def _cat_float32(parts: list[torch.Tensor]) -> torch.Tensor:
    """``parts`` flattened and concatenated as float32 (a new tensor, on their device). Values of
    one dtype are cast after the concatenation; mixed dtypes each before it (no promotion)."""
    if len({part.dtype for part in parts}) == 1:
        return torch.cat([part.reshape(-1) for part in parts]).to(torch.float32)
    return torch.cat([part.to(torch.float32).reshape(-1) for part in parts])


def _collate_fast(
    datums: Sequence[Datum], packed: Any, pad_seq_len_divisible: Any, ignore_index: Any
) -> dict[str, Any]:
    if type(ignore_index) is not int or not INT64_MIN <= ignore_index <= INT64_MAX:
        raise Delegate("odd-ignore-index")

    # One pass over the datums: their token tensors, lengths and loss_fn_inputs.
    keys = datums[0].loss_fn_inputs.keys()
    ids_parts: list[torch.Tensor] = []
    lengths: list[int] = []
    lfis: list[dict] = []
    for datum in datums:
        ids = datum.input_ids
        lfi = datum.loss_fn_inputs
        if ids.ndim != 1 or ids.dtype not in _INT_DTYPES or lfi.keys() != keys:
            raise Delegate(
                "odd-token-dtype-or-key-sets"
            )  # odd token dtypes, or different key sets (the reference's error order)
        ids_parts.append(ids)
        lengths.append(int(ids.shape[0]))
        lfis.append(lfi)
    num = len(lengths)
    lengths_np = np.asarray(lengths, dtype=np.int64)

    # Token fields, built on the CPU [tb-device] with numpy: concatenated once (on the datums'
    # device, then moved), padded with one boolean-mask assignment per field.
    input_ids = torch.cat(ids_parts).to(device="cpu", dtype=torch.int64)  # a new tensor
    labels = _labels(lfis, lengths, ignore_index) if "target_tokens" in keys else None

    batch: dict[str, Any] = {}
    if packed:
        # [collate-packed] One THD row; positions restart at every datum.
        if min(lengths) == 0:
            # [collate-errors] 2: every earlier check of the features (targets, weights) has passed
            raise ValueError(
                f"collate_datums: datum {lengths.index(0)} is empty; packed mode cannot pack an empty sequence"
            )
        total = int(lengths_np.sum())
        starts = np.cumsum(lengths_np) - lengths_np
        batch["input_ids"] = input_ids.unsqueeze(0)
        batch["labels"] = torch.from_numpy(
            labels.reshape(1, total) if labels is not None else np.full((1, total), ignore_index, dtype=np.int64)
        )
        batch["position_ids"] = torch.from_numpy(
            (np.arange(total, dtype=np.int64) - np.repeat(starts, lengths_np)).reshape(1, total)
        )
        batch["seq_lens"] = torch.tensor([lengths], dtype=torch.int64)
        batch["seq_lens_padded"] = torch.tensor([lengths], dtype=torch.int64)
        batch["qkv_format"] = "thd"
        real = None
        width = total
    else:
        # [collate-padded] Right-padded [B, W] rows; padding found by position.
        width = max(lengths)
        if pad_seq_len_divisible:
            width = math.ceil(width / pad_seq_len_divisible) * pad_seq_len_divisible
            if type(width) is not int or width < max(lengths):
                raise Delegate("odd-divisor")
        real = np.arange(width) < lengths_np[:, None]  # [B, W] bool: True on real tokens
        padded_ids = np.zeros((num, width), dtype=np.int64)
        padded_ids[real] = input_ids.numpy()
        batch["input_ids"] = torch.from_numpy(padded_ids)
        batch["attention_mask"] = torch.from_numpy(real.astype(np.int64))
        if labels is not None:
            padded_labels = np.full((num, width), CROSS_ENTROPY_IGNORE_IDX, dtype=np.int64)  # A6
            padded_labels[real] = labels
            batch["labels"] = torch.from_numpy(padded_labels)
        batch["padding_mask"] = torch.from_numpy(~real)

    # [collate-side-inputs] Every other key, sorted, float32 on its values' device.
    for key in sorted(keys - {"target_tokens"}):
        values = [lfi[key] for lfi in lfis]
        if all(value.numel() == length for value, length in zip(values, lengths)):
            flat = _cat_float32(values)
            if real is None:
                batch[key] = flat.unsqueeze(0)
            elif flat.device.type == "cpu" and not flat.requires_grad:
                out = np.zeros((num, width), dtype=np.float32)
                out[real] = flat.numpy()
                batch[key] = torch.from_numpy(out)
            else:  # on an accelerator, or part of an autograd graph: stay in torch
                zeros = torch.zeros((num, width), dtype=torch.float32, device=flat.device)
                batch[key] = zeros.masked_scatter_(torch.from_numpy(real).to(flat.device), flat)
        else:
            if any(value.numel() == 0 for value in values):
                raise Delegate("empty-side-input")  # IndexError in the reference
            batch[key] = _cat_float32([value.reshape(-1)[:1] for value in values])
    return batch


def collate_datums(
    datums: Sequence[Datum],
    *,
    packed: bool = False,
    pad_seq_len_divisible: int | None = None,
    ignore_index: int = CROSS_ENTROPY_IGNORE_IDX,
) -> dict[str, Any]:
    """``batchspec.reference.datum.collate_datums``, vectorized (SPEC.md section 8,
    "``collate_datums``": keys, shapes, dtypes, errors and their order, clauses are there).

    Built straight from the datum tensors with whole-batch operations (this module's
    docstring). Every failing call, and every input the fast path does not handle, is computed
    by the reference function, so errors come in the order [collate-errors] fixes. The datums,
    their tensors and their ``loss_fn_inputs`` mappings are never modified.
    """
    if len(datums) == 0:
        raise ValueError("collate_datums requires at least one Datum")
    try:
        result = _collate_fast(datums, packed, pad_seq_len_divisible, ignore_index)
    except Delegate as delegation:  # an input listed in backends/vectorized/README.md, by name; errors are ours
        record("collate_datums", delegation.reason)
        return _reference.collate_datums(
            datums, packed=packed, pad_seq_len_divisible=pad_seq_len_divisible, ignore_index=ignore_index
        )
    record("collate_datums", "fast")
    return result
