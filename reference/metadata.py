"""Packed metadata: the gathered-token metadata of packed batches (SPEC.md section 2).

Mirrors the two metadata builders of upstream ``nemo_automodel/components/datasets/packing.py``
(nemo-automodel 0.7.0), ``get_unpad_data`` and ``build_packed_sequence_metadata``. Written as
plain loops so each step can be read against SPEC.md; the results, dtypes and errors are
upstream's exactly.
"""

from __future__ import annotations

import torch

from batchspec.reference.contract import PackedSequenceMetadata

__all__ = ["build_packed_sequence_metadata", "get_seqlens_in_batch", "get_unpad_data"]


def _check_mask(attention_mask: torch.Tensor) -> None:
    """Raise upstream's two errors for a mask that cannot be unpadded [unpad-errors]."""
    if attention_mask.ndim != 2:
        raise ValueError(f"attention_mask must have shape [batch, sequence], got {tuple(attention_mask.shape)}")
    if attention_mask.numel() == 0 or not bool(attention_mask.bool().any()):
        raise ValueError("attention_mask must contain at least one valid token")


def get_seqlens_in_batch(attention_mask: torch.Tensor) -> torch.Tensor:
    """Document lengths of an indexed mask, in (row, document id) order [unpad-indexed].

    Args:
        attention_mask: integer ``[batch, sequence]``; each positive value is a 1-based
            row-local document id, 0 marks an excluded token.

    Returns:
        int64 ``[documents]``: for every row, for every id ``1..max(attention_mask)``, that
        id's token count; zero counts are dropped. (Upstream counts in the mask's dtype and
        wraps where a span is longer than that dtype holds; SPEC section 2 leaves such masks
        out of contract, and exact counts are one of the things a backend may return there.)
    """
    max_documents = int(attention_mask.max())
    lengths = []
    for row in attention_mask:
        for document_id in range(1, max_documents + 1):
            count = int((row == document_id).sum())
            if count > 0:
                lengths.append(count)
    return torch.tensor(lengths, dtype=torch.int64, device=attention_mask.device)


def get_unpad_data(attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Flat varlen metadata of an indexed or binary mask [unpad-errors, unpad-binary,
    unpad-indexed, unpad-outputs, unpad-precondition, tb-layout].

    Args:
        attention_mask: bool or integer ``[batch, sequence]``. Nonzero marks a valid token.
            A bool mask, or one whose largest value is at most 1, is *binary*: every row with
            a valid token is one sequence. Otherwise the mask is *indexed*: every distinct
            positive id of a row is one sequence (see ``get_seqlens_in_batch``).

    Returns:
        ``(indices, cu_seqlens, max_seqlen)``: int64 ``[tokens]`` positions of the nonzero
        entries of ``attention_mask.flatten()``; int32 ``[sequences + 1]`` cumulative
        lengths starting at 0; the longest sequence as a Python ``int``. Both tensors are new
        (no storage shared with each other or the mask) and on the mask's device
        [tb-device, tb-no-aliasing].

    Raises:
        ValueError: the mask is not 2-D, or holds no valid token.

    Precondition, not checked (upstream does not either) [unpad-precondition]: ids are
    >= 0 and, along each row with its zeros removed, non-decreasing: each id's tokens are one
    run once zeros are removed (``[1, 0, 1, 2]`` is fine), ids increasing in stream order
    (gaps allowed); otherwise ``cu_seqlens`` does not describe the order of ``indices``.
    """
    _check_mask(attention_mask)

    # 1. The lengths of the sequences, by route.
    is_binary = attention_mask.dtype == torch.bool or int(attention_mask.max()) <= 1
    if is_binary:
        row_lengths = [int(row.bool().sum()) for row in attention_mask]
        lengths = torch.tensor([n for n in row_lengths if n > 0], dtype=torch.int64, device=attention_mask.device)
    else:
        lengths = get_seqlens_in_batch(attention_mask)

    # 2. Flat positions of the valid tokens in the [batch * sequence] stream.
    flat = attention_mask.flatten()
    indices = torch.tensor(
        [i for i in range(flat.numel()) if bool(flat[i])], dtype=torch.int64, device=attention_mask.device
    )

    # 3. Cumulative lengths, starting at 0.
    cumulative = [0]
    for length in lengths.tolist():
        cumulative.append(cumulative[-1] + int(length))
    cu_seqlens = torch.tensor(cumulative, dtype=torch.int32, device=attention_mask.device)

    max_seqlen = max(int(length) for length in lengths.tolist())
    return indices, cu_seqlens, max_seqlen


def build_packed_sequence_metadata(attention_mask: torch.Tensor) -> PackedSequenceMetadata:
    """Batch-major gathered-token metadata of a padded indexed mask [meta-errors, meta-indices,
    meta-cu-seqlens, meta-max-seqlen, meta-return, unpad-precondition, tb-layout].

    Args:
        attention_mask: integer (or bool) ``[batch, sequence]`` of 1-based row-local
            document ids; 0 marks padding and excluded tokens.

    Returns:
        ``packed_token_indices``: int64 ``[batch, sequence]``, the row-local position ``i``
        where the mask is nonzero, else -1.
        ``cu_seqlens``: int32 ``[batch, max(1, max id) + 1]`` filled with -1; each row holds
        ``get_unpad_data(row)``'s cumulative lengths at its front, and a row with no valid
        token holds only ``0`` at column 0. The width is the largest id + 1, not the number
        of ids, so gapped ids leave trailing -1.
        ``max_seqlen``: Python ``int``, the longest sequence over all rows.
        A plain ``dict`` (``PackedSequenceMetadata`` is a ``TypedDict``), read by key; both
        tensors are new and on the mask's device [tb-device, tb-no-aliasing].

    Raises:
        ValueError: the mask is not 2-D, or the whole batch holds no valid token
            (a single empty row is allowed).
    """
    _check_mask(attention_mask)
    batch_size, sequence_length = attention_mask.shape

    # 1. Row-local gather indices, -1 where the token is not gathered.
    device = attention_mask.device  # [tb-device] outputs live where the mask lives
    packed_token_indices = torch.full((batch_size, sequence_length), -1, dtype=torch.int64, device=device)
    for b in range(batch_size):
        for i in range(sequence_length):
            if bool(attention_mask[b, i]):
                packed_token_indices[b, i] = i

    # 2. Per-row cumulative lengths, -1 in unused slots.
    max_documents = max(1, int(attention_mask.max()))
    cu_seqlens = torch.full((batch_size, max_documents + 1), -1, dtype=torch.int32, device=device)
    max_seqlen = 0
    for b in range(batch_size):
        row = attention_mask[b : b + 1]
        if not bool(row.bool().any()):
            cu_seqlens[b, 0] = 0
            continue
        _, row_cu_seqlens, row_max_seqlen = get_unpad_data(row)
        cu_seqlens[b, : row_cu_seqlens.numel()] = row_cu_seqlens
        max_seqlen = max(max_seqlen, row_max_seqlen)

    return {
        "packed_token_indices": packed_token_indices,
        "cu_seqlens": cu_seqlens,
        "max_seqlen": max_seqlen,
    }
