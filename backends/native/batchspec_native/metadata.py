"""``get_unpad_data`` and ``build_packed_sequence_metadata`` (SPEC.md section 2) in native code.

Python checks the mask's type and shape and allocates the outputs; the library reads the mask
in place through its strides (any layout [tb-layout]; no copy for bool, uint8 and int64 masks,
one ``int64`` copy for the other integer dtypes). ``get_unpad_data`` takes two passes: the
nonzero count and largest value (validity, the route, the output shapes), then the outputs.
``build_packed_sequence_metadata`` takes one: the indices, each row's spans (into a
``[B, S + 1]`` buffer of which only the spans are written) and the statistics together, then
``cu_seqlens`` is laid out at the width the largest value gives. A mask on an accelerator is
read on the CPU and the outputs go back to its device [tb-device].

Delegated on purpose: a floating-point mask (outside SPEC's bool / integer masks) goes to
``batchspec.backends.vectorized``'s function of the same name.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch

from batchspec.backends import vectorized
from batchspec_native._library import LIBRARY, MASK_I64, MASK_U8

__all__ = ["build_packed_sequence_metadata", "get_unpad_data"]


def _host_mask(attention_mask: Any) -> tuple[torch.Tensor, int]:
    """The mask as a CPU tensor the library reads (bool / uint8 bytes or int64) and its kind;
    raises the shape errors of [unpad-errors] / [meta-errors]."""
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a torch.Tensor, got {type(attention_mask).__name__}")
    if attention_mask.ndim != 2:
        raise ValueError(f"attention_mask: expected 2 dims [batch, sequence], got shape {tuple(attention_mask.shape)}")
    if attention_mask.numel() == 0:
        raise ValueError(f"attention_mask holds no valid token (it is empty, shape {tuple(attention_mask.shape)})")
    mask = attention_mask.cpu()
    if mask.dtype in (torch.bool, torch.uint8):
        return mask, MASK_U8
    if mask.dtype != torch.int64:
        mask = mask.to(torch.int64)
    return mask, MASK_I64


def _view(mask: torch.Tensor, kind: int) -> tuple[int, int, int, int, int, int]:
    rows, cols = mask.shape
    return mask.data_ptr(), kind, rows, cols, mask.stride(0), mask.stride(1)


def _stats(view: tuple[int, ...]) -> tuple[int, int]:
    stats = (ctypes.c_int64 * 2)()
    LIBRARY.bs_mask_stats(*view, stats)
    nonzero, largest = stats
    if nonzero == 0:
        raise ValueError("attention_mask holds no valid token (every entry is 0)")
    return nonzero, largest


def get_unpad_data(attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``(indices, cu_seqlens, max_seqlen)`` of a ``[batch, sequence]`` mask (bool or integer):
    ``indices`` int64 ``[tokens]`` (flat positions of the nonzero entries), ``cu_seqlens`` int32
    ``[spans + 1]``, ``max_seqlen`` a Python ``int`` [unpad-outputs]; one span per nonzero row of
    a binary mask (bool, or largest value <= 1) [unpad-binary], else one per (row, id) in that
    order [unpad-indexed]; id order is not checked [unpad-precondition].

    Raises ``TypeError`` for a mask that is not a tensor, ``ValueError`` naming
    ``attention_mask`` (and the shape) when it is not 2-D, empty or all zero [unpad-errors].
    """
    if isinstance(attention_mask, torch.Tensor) and (attention_mask.is_floating_point() or attention_mask.is_complex()):
        return vectorized.get_unpad_data(attention_mask)
    mask, kind = _host_mask(attention_mask)
    view = _view(mask, kind)
    nonzero, largest = _stats(view)
    binary = kind == MASK_U8 and mask.dtype == torch.bool or largest <= 1
    rows = mask.shape[0]
    capacity = (rows if binary else min(nonzero, rows * max(largest, 1))) + 1
    indices = torch.empty(nonzero, dtype=torch.int64)
    cu_seqlens = torch.empty(capacity, dtype=torch.int32)
    result = torch.empty(2, dtype=torch.int64)
    LIBRARY.bs_get_unpad_data(
        *view, int(binary), largest, indices.data_ptr(), nonzero, cu_seqlens.data_ptr(), capacity, result.data_ptr()
    )
    spans, max_seqlen = result.tolist()
    if spans + 1 < capacity:
        cu_seqlens = cu_seqlens[: spans + 1].clone()
    device = attention_mask.device
    return indices.to(device), cu_seqlens.to(device), int(max_seqlen)


def _metadata(mask: torch.Tensor, kind: int) -> dict:
    """One pass of the library over the mask (indices, per-row spans, the mask's statistics),
    then ``cu_seqlens`` at the width its largest value gives."""
    view = _view(mask, kind)
    rows, cols = mask.shape
    packed_token_indices = torch.empty((rows, cols), dtype=torch.int64)
    # each row's cumulative span lengths (only its spans + 1 first entries are written)
    cu_rows = torch.empty((rows, cols + 1), dtype=torch.int32)
    spans = torch.empty(rows, dtype=torch.int64)
    summary = (ctypes.c_int64 * 3)()
    LIBRARY.bs_build_packed_sequence_metadata(
        *view, packed_token_indices.data_ptr(), cu_rows.data_ptr(), spans.data_ptr(), summary
    )
    nonzero, largest, max_seqlen = summary
    if nonzero == 0:
        raise ValueError("attention_mask holds no valid token (every entry is 0)")
    width = max(1, 1 if mask.dtype == torch.bool else largest) + 1
    cu_seqlens = torch.empty((rows, width), dtype=torch.int32)
    LIBRARY.bs_cu_from_rows(cu_rows.data_ptr(), cols + 1, spans.data_ptr(), rows, width, cu_seqlens.data_ptr())
    return {"packed_token_indices": packed_token_indices, "cu_seqlens": cu_seqlens, "max_seqlen": int(max_seqlen)}


def build_packed_sequence_metadata(attention_mask: torch.Tensor) -> dict:
    """``{"packed_token_indices", "cu_seqlens", "max_seqlen"}`` of a ``[batch, sequence]`` mask
    [meta-return]: ``packed_token_indices`` int64 ``[batch, sequence]`` (the row-local position
    where the mask is nonzero, ``-1`` elsewhere) [meta-indices]; ``cu_seqlens`` int32
    ``[batch, max(1, max(mask)) + 1]``, ``-1`` filled, row ``b`` holding ``get_unpad_data``'s of
    ``mask[b:b+1]`` (an all-zero row: ``0`` then ``-1``) [meta-cu-seqlens]; ``max_seqlen`` the
    largest per-row one, a Python ``int`` [meta-max-seqlen].

    Raises the errors of ``get_unpad_data`` over the whole batch [meta-errors].
    """
    if isinstance(attention_mask, torch.Tensor) and (attention_mask.is_floating_point() or attention_mask.is_complex()):
        return vectorized.build_packed_sequence_metadata(attention_mask)
    mask, kind = _host_mask(attention_mask)
    out = _metadata(mask, kind)
    device = attention_mask.device
    if device.type != "cpu":
        out["packed_token_indices"] = out["packed_token_indices"].to(device)
        out["cu_seqlens"] = out["cu_seqlens"].to(device)
    return out
