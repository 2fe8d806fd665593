"""``get_unpad_data`` with its tensor work in Triton kernels (SPEC.md section 2, "Packed metadata").

The span lengths are a per-row histogram of span keys (``span_count_kernel``: one program per
row and ``BLOCK`` of columns, atomic adds), read in (row, id) order [unpad-indexed];
``cu_seqlens`` is a blocked exclusive scan carrying its total across block edges
(``exclusive_scan_kernel``). Ids far beyond the row length are first ranked densely (the ranks
keep the ids' order, so the (row, id) order is unchanged) so the table stays ``[B, <= S + 1]``.
"""

from __future__ import annotations

import torch
import triton

from batchspec.backends.triton import kernels
from batchspec.backends.triton.placement import kernel_device

__all__ = ["build_packed_sequence_metadata", "get_unpad_data"]


def _check_mask(attention_mask: torch.Tensor) -> None:
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a torch.Tensor, got {type(attention_mask).__name__}")
    if attention_mask.ndim != 2:
        raise ValueError(f"attention_mask: expected 2 dims [batch, sequence], got shape {tuple(attention_mask.shape)}")
    if attention_mask.numel() == 0:
        raise ValueError(f"attention_mask holds no valid token (it is empty, shape {tuple(attention_mask.shape)})")


def span_lengths(attention_mask: torch.Tensor, binary: bool, width: int) -> torch.Tensor:
    """int64 ``[B, width]``: tokens per span key per row (column 0: tokens in no span)."""
    batch, sequence = attention_mask.shape
    mask = attention_mask.contiguous()
    if mask.dtype == torch.bool:
        mask = mask.to(torch.int8)
    table = torch.zeros(batch, width, dtype=torch.int64, device=mask.device)
    grid = (batch, triton.cdiv(sequence, kernels.BLOCK))
    kernels.span_count_kernel[grid](mask, table, sequence, width, mask.stride(0), binary=binary, BLOCK=kernels.BLOCK)
    return table


def exclusive_scan(lengths: torch.Tensor) -> torch.Tensor:
    """int32 ``[N + 1]``: 0 then the running totals of the int64 ``[N]`` ``lengths``."""
    out = torch.empty(lengths.numel() + 1, dtype=torch.int32, device=lengths.device)
    kernels.exclusive_scan_kernel[(1,)](lengths.contiguous(), out, lengths.numel(), BLOCK=kernels.BLOCK)
    return out


def get_unpad_data(attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``batchspec.reference.metadata.get_unpad_data`` on Triton kernels (SPEC.md section 2,
    "Packed metadata": ``attention_mask`` ``[batch, sequence]`` bool or integer; returns
    ``indices`` int64 ``[tokens]``, ``cu_seqlens`` int32 ``[spans + 1]``, ``max_seqlen`` int;
    TypeError/ValueError as [unpad-errors] says) [unpad-binary, unpad-indexed, unpad-precondition].
    """
    _check_mask(attention_mask)
    device = attention_mask.device  # [tb-device]: the outputs' device; the kernels run on kernel_device(device)
    attention_mask = attention_mask.to(kernel_device(device))
    nonzero = attention_mask != 0
    if attention_mask.dtype == torch.bool:
        smallest, largest = int(attention_mask.all()), int(attention_mask.any())
    else:
        smallest, largest = (int(v) for v in torch.aminmax(attention_mask.to(torch.int64)))
    if smallest == 0 and largest == 0:
        raise ValueError("attention_mask holds no valid token (every entry is 0)")
    binary = attention_mask.dtype == torch.bool or largest <= 1  # the route is global [unpad-binary]
    mask = attention_mask
    if binary:
        width = 2
    elif largest + 1 <= 2 * attention_mask.shape[1] + 2:
        width = largest + 1
    else:  # dense ranks of the positive ids, in id order
        keys = attention_mask.to(torch.int64).clamp(min=0)
        values, ranks = torch.unique(keys, return_inverse=True)
        mask = ranks + int(values[0] != 0)
        width = int(mask.max()) + 1
    lengths = span_lengths(mask, binary, width)[:, 1:].flatten()  # (row, id) order
    present = lengths > 0
    tokens = int(nonzero.sum())
    indices = torch.nonzero_static(nonzero.flatten(), size=tokens).flatten()
    kept = lengths[present]
    cu_seqlens = exclusive_scan(kept)
    return indices.to(device), cu_seqlens.to(device), int(kept.max())


def build_packed_sequence_metadata(attention_mask: torch.Tensor) -> dict:
    """``batchspec.reference.metadata.build_packed_sequence_metadata`` on Triton kernels (SPEC.md
    section 2, "Packed metadata": ``attention_mask`` ``[batch, sequence]`` bool or integer;
    returns ``packed_token_indices`` int64 ``[batch, sequence]``, ``cu_seqlens`` int32
    ``[batch, max(1, largest id) + 1]`` padded with -1, ``max_seqlen`` int; TypeError/ValueError
    as [meta-errors] says) [meta-indices, meta-cu-seqlens, meta-max-seqlen, meta-return].

    ``row_span_count_kernel`` decides each row's route and counts its spans (one program per
    row); ``row_cu_seqlens_kernel`` packs each row's running totals (one program per row). The
    device is read once, for the width (the largest entry) and whether any token is valid.
    """
    _check_mask(attention_mask)
    batch, sequence = attention_mask.shape
    output = attention_mask.device  # [tb-device]; the kernels run on kernel_device(output)
    mask = attention_mask.to(kernel_device(output)).contiguous()
    if mask.dtype == torch.bool:
        mask = mask.to(torch.int8)
    any_valid, largest = (int(v) for v in torch.stack([(mask != 0).any().to(torch.int64), mask.amax().to(torch.int64)]))
    if not any_valid:
        raise ValueError("attention_mask holds no valid token (every entry is 0)")
    width = max(1, largest) + 1  # the output's width: the largest id + 1
    device = mask.device
    table = torch.zeros(batch, width, dtype=torch.int64, device=device)
    indices = torch.empty(batch, sequence, dtype=torch.int64, device=device)
    all_binary = attention_mask.dtype == torch.bool
    kernels.row_span_count_kernel[(batch,)](
        mask, table, indices, sequence, width, mask.stride(0), all_binary=all_binary, BLOCK=kernels.BLOCK
    )
    cu_seqlens = torch.full((batch, width), -1, dtype=torch.int32, device=device)
    cu_seqlens[:, 0] = 0
    longest = torch.zeros(1, dtype=torch.int64, device=device)
    kernels.row_cu_seqlens_kernel[(batch,)](table, cu_seqlens, longest, width, BLOCK=kernels.BLOCK)
    return {"packed_token_indices": indices.to(output), "cu_seqlens": cu_seqlens.to(output), "max_seqlen": int(longest)}
