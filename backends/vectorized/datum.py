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
The inputs of ``DELEGATIONS["collate_datums"]`` (an out-of-range or non-int ``ignore_index``,
datums with different key sets, token dtypes other than int8-int64/uint8, target_tokens of
another shape or not integers, weights on another device or of another shape, a float or
negative divisor), checked before any work, are computed by
``batchspec.reference.datum.collate_datums``, which raises the error [collate-errors] fixes, in
its order (backends/vectorized/README.md lists them with their share of the suite's calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from batchspec.backends.vectorized import paths
from batchspec.backends.vectorized.rules import odd_width, padded_width
from batchspec.reference import datum as _reference
from batchspec.reference.contract import CROSS_ENTROPY_IGNORE_IDX, INT64_MAX, INT64_MIN
from batchspec.reference.datum import Datum

__all__ = ["CROSS_ENTROPY_IGNORE_IDX", "DELEGATIONS", "Datum", "collate_datums"]

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


def _weights_mask(weight: torch.Tensor, length: int) -> torch.Tensor:
    """``weights`` as ``[length]``: a 0-D or length-1 tensor broadcast, as ``masked_fill`` does."""
    return weight.reshape(1).expand(length) if weight.numel() == 1 and weight.ndim <= 1 else weight


def _labels(lfis: list[dict], lengths: list[int], ignore_index: int) -> np.ndarray:
    """All datums' labels concatenated, int64 ``[sum(T_i)]`` on the CPU: their ``target_tokens``
    with ``ignore_index`` wherever ``weights == 0`` (a scalar or length-1 ``weights``
    broadcasts over its datum) [collate-weights, datum-to-features]. The delegations have made
    sure every ``target_tokens`` is a 1-D integer tensor of its datum's length (or an empty
    float one) and every ``weights`` broadcasts to it on its device."""
    targets = [lfi["target_tokens"] for lfi, length in zip(lfis, lengths) if length]
    weights = [_weights_mask(lfi["weights"], n) for lfi, n in zip(lfis, lengths) if n and "weights" in lfi]
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


def _packed_fields(input_ids: torch.Tensor, labels: np.ndarray | None, lengths: list[int], ignore_index: int) -> dict:
    """[collate-packed] One THD row ``[1, sum(T_i)]``; positions restart at every datum.

    Raises:
        ValueError: an empty datum ([collate-errors] 2: every earlier check of the features has passed).
    """
    if min(lengths) == 0:
        raise ValueError(
            f"collate_datums: datum {lengths.index(0)} is empty; packed mode cannot pack an empty sequence"
        )
    lengths_np = np.asarray(lengths, dtype=np.int64)
    total = int(lengths_np.sum())
    starts = np.cumsum(lengths_np) - lengths_np
    if labels is None:
        labels = np.full(total, ignore_index, dtype=np.int64)
    return {
        "input_ids": input_ids.unsqueeze(0),
        "labels": torch.from_numpy(labels.reshape(1, total)),
        "position_ids": torch.from_numpy((np.arange(total, dtype=np.int64) - np.repeat(starts, lengths_np))[None]),
        "seq_lens": torch.tensor([lengths], dtype=torch.int64),
        "seq_lens_padded": torch.tensor([lengths], dtype=torch.int64),
        "qkv_format": "thd",
    }


def _padded_fields(input_ids: torch.Tensor, labels: np.ndarray | None, real: np.ndarray) -> dict:
    """[collate-padded] Right-padded ``[B, W]`` rows (``real``: True on real tokens); padding
    found by position."""
    padded_ids = np.zeros(real.shape, dtype=np.int64)
    padded_ids[real] = input_ids.numpy()
    batch = {"input_ids": torch.from_numpy(padded_ids), "attention_mask": torch.from_numpy(real.astype(np.int64))}
    if labels is not None:
        padded_labels = np.full(real.shape, CROSS_ENTROPY_IGNORE_IDX, dtype=np.int64)  # A6
        padded_labels[real] = labels
        batch["labels"] = torch.from_numpy(padded_labels)
    batch["padding_mask"] = torch.from_numpy(~real)
    return batch


def _side_input(key: str, values: list[torch.Tensor], lengths: list[int], real: np.ndarray | None) -> torch.Tensor:
    """[collate-side-inputs] One side input, float32 on its values' device: per-token
    ``[1, sum(T_i)]`` (packed, ``real`` None) or ``[B, W]`` 0.0-padded, else per-sample ``[B]``.

    Raises:
        IndexError: a per-sample value is empty for some datum (upstream's error; out of contract).
    """
    if all(value.numel() == length for value, length in zip(values, lengths)):
        flat = _cat_float32(values)
        if real is None:
            return flat.unsqueeze(0)
        if flat.device.type == "cpu" and not flat.requires_grad:
            out = np.zeros(real.shape, dtype=np.float32)
            out[real] = flat.numpy()
            return torch.from_numpy(out)
        # on an accelerator, or part of an autograd graph: stay in torch
        padded = torch.zeros(real.shape, dtype=torch.float32, device=flat.device)
        return padded.masked_scatter_(torch.from_numpy(real).to(flat.device), flat)
    for index, value in enumerate(values):
        if value.numel() == 0:
            raise IndexError(f"collate_datums: loss_fn_inputs[{key!r}] of datum {index} is empty and not per-token")
    return _cat_float32([value.reshape(-1)[:1] for value in values])


def _collate_fast(
    datums: Sequence[Datum], packed: bool, pad_seq_len_divisible: Any, ignore_index: int
) -> dict[str, Any]:
    keys = datums[0].loss_fn_inputs.keys()
    lfis = [datum.loss_fn_inputs for datum in datums]
    lengths = [int(datum.input_ids.shape[0]) for datum in datums]
    # Token fields, built on the CPU [tb-device] with numpy: concatenated once (on the datums'
    # device, then moved), padded with one boolean-mask assignment per field.
    input_ids = torch.cat([datum.input_ids for datum in datums]).to(device="cpu", dtype=torch.int64)  # a new tensor
    labels = _labels(lfis, lengths, ignore_index) if "target_tokens" in keys else None
    real = None
    if packed:
        batch = _packed_fields(input_ids, labels, lengths, ignore_index)
    else:
        width = padded_width(max(lengths), pad_seq_len_divisible)
        real = np.arange(width) < np.asarray(lengths, dtype=np.int64)[:, None]  # [B, W] bool: True on real tokens
        batch = _padded_fields(input_ids, labels, real)
    for key in sorted(keys - {"target_tokens"}):  # every other key, sorted
        batch[key] = _side_input(key, [lfi[key] for lfi in lfis], lengths, real)
    return batch


# --- the delegations: predicates on (datums, packed, pad_seq_len_divisible, ignore_index) ----------


def _odd_ignore_index(datums: Sequence[Datum], packed: Any, divisor: Any, ignore_index: Any) -> bool:
    return type(ignore_index) is not int or not INT64_MIN <= ignore_index <= INT64_MAX


def _different_key_sets(datums: Sequence[Datum], packed: Any, divisor: Any, ignore_index: Any) -> bool:
    # [collate-errors] 3 comes after the collation's own errors (KeyError 'labels', a length):
    # the reference's order decides
    keys = datums[0].loss_fn_inputs.keys()
    return any(datum.loss_fn_inputs.keys() != keys for datum in datums)


def _odd_token_dtype(datums: Sequence[Datum], packed: Any, divisor: Any, ignore_index: Any) -> bool:
    # a Datum keeps a tensor's dtype (bool, float, uint16+ ids); 2-D only if reassigned after construction
    return any(datum.input_ids.ndim != 1 or datum.input_ids.dtype not in _INT_DTYPES for datum in datums)


def _targets(datums: Sequence[Datum]) -> list[tuple[dict, int]]:
    """``(loss_fn_inputs, T)`` of every datum, when the datums carry ``target_tokens``."""
    if "target_tokens" not in datums[0].loss_fn_inputs:
        return []
    return [(datum.loss_fn_inputs, int(datum.input_ids.shape[0])) for datum in datums]


def _targets_of_another_shape(datums: Sequence[Datum], packed: Any, divisor: Any, ignore_index: Any) -> bool:
    return any(lfi["target_tokens"].shape != (length,) for lfi, length in _targets(datums))


def _non_integer_targets(datums: Sequence[Datum], packed: Any, divisor: Any, ignore_index: Any) -> bool:
    # ``Datum([], {"target_tokens": []})`` holds an empty float32: no label, taken
    return any(
        lfi["target_tokens"].dtype not in _INT_DTYPES
        and not (length == 0 and lfi["target_tokens"].dtype in (torch.float32, torch.float64))
        for lfi, length in _targets(datums)
    )


def _weights_elsewhere_or_ignore_index_overflow(
    datums: Sequence[Datum], packed: Any, divisor: Any, ignore_index: Any
) -> bool:
    # the reference's per-datum masked_fill decides (an error, or a wrap-around)
    return any(
        "weights" in lfi
        and (
            lfi["weights"].device != lfi["target_tokens"].device
            or (lfi["target_tokens"].dtype in _INT_DTYPES and not _fits(ignore_index, lfi["target_tokens"].dtype))
        )
        for lfi, _ in _targets(datums)
    )


def _weights_of_another_shape(datums: Sequence[Datum], packed: Any, divisor: Any, ignore_index: Any) -> bool:
    # does not broadcast (RuntimeError), or broadcasts to another shape
    return any(
        "weights" in lfi and _weights_mask(lfi["weights"], length).shape != (length,)
        for lfi, length in _targets(datums)
    )


def _odd_divisor(datums: Sequence[Datum], packed: Any, divisor: Any, ignore_index: Any) -> bool:
    return not packed and odd_width(max(int(datum.input_ids.shape[0]) for datum in datums), divisor)


_COLLATE_DATUMS = (
    ("odd-ignore-index", _odd_ignore_index),
    ("different-key-sets", _different_key_sets),
    ("odd-token-dtype", _odd_token_dtype),
    ("targets-of-another-shape", _targets_of_another_shape),
    ("non-integer-targets", _non_integer_targets),
    ("weights-elsewhere-or-ignore-index-overflow", _weights_elsewhere_or_ignore_index_overflow),
    ("weights-of-another-shape", _weights_of_another_shape),
    ("odd-divisor", _odd_divisor),
)

# function -> its delegations, in the order they are checked (backends/vectorized/README.md)
DELEGATIONS: dict[str, paths.Delegations] = {"collate_datums": _COLLATE_DATUMS}


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
    docstring). The inputs of ``DELEGATIONS["collate_datums"]``, checked first, are computed by
    the reference function, so their errors come in the order [collate-errors] fixes. The
    datums, their tensors and their ``loss_fn_inputs`` mappings are never modified.

    Raises:
        ValueError: no datum; packed mode with an empty datum [collate-errors].
        IndexError: an empty per-sample side input (out of contract; upstream's error).
    """
    if len(datums) == 0:
        raise ValueError("collate_datums requires at least one Datum")
    args = (datums, packed, pad_seq_len_divisible, ignore_index)
    if paths.choose("collate_datums", _COLLATE_DATUMS, *args):
        return _reference.collate_datums(
            datums, packed=packed, pad_seq_len_divisible=pad_seq_len_divisible, ignore_index=ignore_index
        )
    return _collate_fast(*args)
