"""``get_unpad_data`` and ``build_packed_sequence_metadata`` as whole-batch tensor work.

Neither function loops over rows, documents or tokens, and each reads the device once (one
``.tolist()`` of a handful of scalars: the largest id, which decides a shape, and
``max_seqlen``, which is a Python ``int``). Both accept any mask the clauses define, including
masks outside the id order of [unpad-precondition]: a per-row sort puts every id's tokens
together, so ``[[1, 2, 1]]`` gives ``cu_seqlens [0, 2, 3]`` as the clause requires.
``monotone_row_spans`` is the cheaper path ``convert_text_batch`` uses on the ids it builds
itself, which satisfy the precondition by construction.
"""

from __future__ import annotations

import torch

__all__ = ["build_packed_sequence_metadata", "get_unpad_data", "monotone_row_spans"]


def _check_mask(attention_mask: torch.Tensor) -> None:
    """The shape half of [unpad-errors]/[meta-errors]; the "no valid token" half is read with
    the function's one host transfer."""
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a torch.Tensor, got {type(attention_mask).__name__}")
    if attention_mask.ndim != 2:
        raise ValueError(f"attention_mask: expected 2 dims [batch, sequence], got shape {tuple(attention_mask.shape)}")
    if attention_mask.numel() == 0:
        raise ValueError(f"attention_mask holds no valid token (it is empty, shape {tuple(attention_mask.shape)})")


def _no_valid_token() -> ValueError:
    return ValueError("attention_mask holds no valid token (every entry is 0)")


def _span_ends(keys: torch.Tensor) -> torch.Tensor:
    """bool ``[B, S]``: where a stretch of equal positive ``keys`` ends along its row."""
    positive = keys > 0
    ends = positive.clone()
    ends[:, :-1] &= keys[:, 1:] != keys[:, :-1]
    return ends


def _span_keys(attention_mask: torch.Tensor, binary: torch.Tensor) -> torch.Tensor:
    """int64 ``[B, S]`` span keys, sorted along each row: a binary row (``binary`` True, bool
    broadcastable to ``[B, 1]``) is one span of key 1 over its nonzero entries [unpad-binary];
    an indexed row keeps its positive ids (zero and negative entries are in no span)
    [unpad-indexed]. Sorting groups each id's tokens, so the spans come in (row, id) order."""
    nonzero = attention_mask != 0
    ids = attention_mask.to(torch.int64).clamp(min=0)
    keys = torch.where(binary, nonzero.to(torch.int64), ids)
    return keys.sort(dim=1).values


def get_unpad_data(attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Flat varlen metadata of an indexed or binary mask [unpad-errors, unpad-binary,
    unpad-indexed, unpad-outputs, unpad-precondition, tb-device, tb-no-aliasing].

    Args:
        attention_mask: bool or integer ``[batch, sequence]``; nonzero marks a valid token. A
            bool mask, or one whose largest value is at most 1, is binary (one span per row
            with a valid token); otherwise each row's distinct positive ids are its spans, in
            (row, id) order.

    Returns:
        ``(indices, cu_seqlens, max_seqlen)``: int64 ``[tokens]`` flat positions of the
        nonzero entries; int32 ``[spans + 1]`` cumulative span lengths from 0; the longest
        span as a Python ``int``. New tensors on the mask's device.

    Raises:
        ValueError: the mask is not 2-D, is empty, or holds no nonzero entry.
    """
    _check_mask(attention_mask)
    nonzero = attention_mask != 0
    is_bool = attention_mask.dtype == torch.bool
    largest = nonzero.any().to(torch.int64) if is_bool else attention_mask.max().to(torch.int64)
    # The route is global: binary when the largest value is <= 1.
    keys = _span_keys(attention_mask, largest <= 1)
    ends = _span_ends(keys)
    counted = keys > 0
    # In the row-major stream of sorted keys, the running count of counted tokens at a span's
    # end is exactly its cu_seqlens entry; its length is that minus the previous span end's.
    cumulative = counted.flatten().cumsum(0)
    flat_ends = ends.flatten()
    end_totals = torch.where(flat_ends, cumulative, 0)
    previous = torch.cat([end_totals.new_zeros(1), end_totals.cummax(0).values[:-1]])
    span_lengths = torch.where(flat_ends, cumulative - previous, 0)
    any_valid, tokens, spans, max_seqlen = torch.stack(
        [nonzero.any().to(torch.int64), nonzero.sum(), flat_ends.sum(), span_lengths.max()]
    ).tolist()
    if not any_valid:
        raise _no_valid_token()
    indices = torch.nonzero_static(nonzero.flatten(), size=tokens).flatten()
    end_positions = torch.nonzero_static(flat_ends, size=spans).flatten()
    cu_seqlens = torch.zeros(spans + 1, dtype=torch.int32, device=attention_mask.device)
    cu_seqlens[1:] = cumulative[end_positions]
    return indices, cu_seqlens, int(max_seqlen)


def build_packed_sequence_metadata(attention_mask: torch.Tensor) -> dict:
    """Batch-major gathered-token metadata of a padded mask [meta-errors, meta-indices,
    meta-cu-seqlens, meta-max-seqlen, meta-return, unpad-binary, unpad-precondition, tb-device,
    tb-no-aliasing].

    Args:
        attention_mask: integer (or bool) ``[batch, sequence]``; each row is binary (largest
            value <= 1) or indexed on its own.

    Returns:
        A plain ``dict``: ``packed_token_indices`` int64 ``[batch, sequence]`` (the position
        where the mask is nonzero, else -1); ``cu_seqlens`` int32 ``[batch, max(1, max id) +
        1]`` (each row's cumulative span lengths at its front, ``-1`` after them, a row with
        no valid token ``[0, -1, ...]``); ``max_seqlen`` a Python ``int``. New tensors on the
        mask's device.

    Raises:
        ValueError: the mask is not 2-D, is empty, or the whole batch holds no valid token.
    """
    _check_mask(attention_mask)
    batch, sequence = attention_mask.shape
    device = attention_mask.device
    nonzero = attention_mask != 0
    columns = torch.arange(sequence, device=device)
    packed_token_indices = torch.where(nonzero, columns, -1)

    if attention_mask.dtype == torch.bool:
        row_binary = torch.ones(batch, 1, dtype=torch.bool, device=device)
        largest = nonzero.any().to(torch.int64)
    else:
        row_binary = attention_mask.amax(dim=1, keepdim=True) <= 1
        largest = attention_mask.max().to(torch.int64)
    keys = _span_keys(attention_mask, row_binary)
    ends = _span_ends(keys)
    running = (keys > 0).cumsum(dim=1)  # tokens counted so far along the (sorted) row
    end_totals = torch.where(ends, running, 0)
    previous = torch.cat([end_totals.new_zeros(batch, 1), end_totals.cummax(dim=1).values[:, :-1]], dim=1)
    max_seqlen_t = torch.where(ends, running - previous, 0).max()
    any_valid, largest_id, max_seqlen = torch.stack([nonzero.any().to(torch.int64), largest, max_seqlen_t]).tolist()
    if not any_valid:
        raise _no_valid_token()

    width = max(1, largest_id) + 1
    # Each span end writes its running total into column (its span number within the row);
    # every other token writes into one spare slot past the end, dropped afterwards.
    column = ends.cumsum(dim=1)
    rows = torch.arange(batch, device=device)[:, None]
    target = torch.where(ends, rows * width + column, batch * width)
    flat = torch.full((batch * width + 1,), -1, dtype=torch.int32, device=device)
    flat.scatter_(0, target.flatten(), running.flatten().to(torch.int32))
    cu_seqlens = flat[:-1].view(batch, width)
    cu_seqlens[:, 0] = 0
    return {"packed_token_indices": packed_token_indices, "cu_seqlens": cu_seqlens, "max_seqlen": int(max_seqlen)}


def monotone_row_spans(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Span sizes of ids that ``convert_text_batch`` builds: non-negative, ``1 .. D_b``
    consecutive along row ``b`` from column 0, zeros only as a trailing suffix.

    Returns:
        ``counts``: int64 ``[B, S + 1]``, ``counts[b, k]`` the tokens of id ``k`` in row ``b``
        (column 0 counts the trailing zeros); ``spans``: int64 ``[B]``, ``D_b`` (the row's
        largest id). For such ids the (row, id) order of [unpad-indexed] is stream order, so
        these give the metadata bundle and the THD lengths without a sort.
    """
    batch, sequence = ids.shape
    counts = torch.zeros(batch, sequence + 1, dtype=torch.int64, device=ids.device)
    counts.scatter_add_(1, ids, torch.ones_like(ids))
    return counts, ids.amax(dim=1)


def metadata_from_spans(ids: torch.Tensor, counts: torch.Tensor, spans: torch.Tensor, width: int) -> dict:
    """``build_packed_sequence_metadata(ids)`` for ids of ``monotone_row_spans``, once the
    host knows ``width = max(1, max id) + 1`` [meta-indices, meta-cu-seqlens, batched-metadata].
    ``max_seqlen`` is filled in by the caller from its one host transfer."""
    columns = torch.arange(ids.shape[1], device=ids.device)
    packed_token_indices = torch.where(ids > 0, columns, -1)
    slot = torch.arange(width, device=ids.device)
    totals = torch.zeros(ids.shape[0], width, dtype=torch.int64, device=ids.device)
    totals[:, 1:] = counts[:, 1:width].cumsum(dim=1)
    cu_seqlens = torch.where(slot <= spans[:, None], totals, -1).to(torch.int32)
    return {"packed_token_indices": packed_token_indices, "cu_seqlens": cu_seqlens}
