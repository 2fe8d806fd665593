"""``get_unpad_data`` and ``build_packed_sequence_metadata`` as whole-batch tensor work.

Neither function loops over rows, documents or tokens. The span lengths come from one table of
token counts per (row, id), ``[B, max id + 1]``, built by one ``scatter_add_``: its row-major order
is exactly the (row, id) order of [unpad-indexed], whatever the order of the ids along a row
(``[[1, 2, 1]]`` gives ``cu_seqlens [0, 2, 3]`` as [unpad-precondition] requires), and its
cost does not depend on how many documents a row holds. The table's width is the largest id,
which the output's shape needs anyway (``build_packed_sequence_metadata``'s ``cu_seqlens`` is
``[B, max id + 1]``); ``get_unpad_data`` needs no table on its binary route (a row sum) and
falls back to a per-row sort only for ids far beyond the sequence length. Each function reads
the device twice: the mask's extremes (validity, the route, a shape) and the sizes and
``max_seqlen`` (a Python ``int``). ``monotone_row_spans`` is the one-read path
``convert_text_batch`` uses on the ids it builds itself.
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


def _count_table(attention_mask: torch.Tensor, binary: torch.Tensor | None, width: int) -> torch.Tensor:
    """int64 ``[B, width]``: ``table[b, k]`` counts the tokens of span key ``k`` in row ``b``
    (column 0: tokens in no span). A binary row (``binary`` True, bool broadcastable to
    ``[B, 1]``) counts every nonzero entry under key 1 [unpad-binary]; an indexed row counts each
    positive id under itself, zero and negative entries under 0 [unpad-indexed]. ``binary=None``
    says the mask has no negative entry: then every row's keys are its values (a binary row's
    values are 0 and 1 already), and the table needs no key pass. Keys must be below ``width``."""
    batch = attention_mask.shape[0]
    if binary is None:
        keys = attention_mask.to(torch.int64)
    else:
        nonzero = attention_mask != 0
        keys = torch.where(binary, nonzero.to(torch.int64), attention_mask.to(torch.int64).clamp(min=0))
    rows = torch.arange(batch, device=attention_mask.device)[:, None] * width
    slots = (keys + rows).flatten()
    # scatter_add_ rather than bincount: bincount reads the keys' min and max first.
    table = torch.zeros(batch * width, dtype=torch.int64, device=attention_mask.device)
    return table.scatter_add_(0, slots, torch.ones(1, dtype=torch.int64, device=table.device).expand_as(slots)).view(
        batch, width
    )


def _extremes(attention_mask: torch.Tensor) -> tuple[int, int, int]:
    """``(any valid token, smallest value, largest value)`` read in one host transfer (a bool
    mask reads as 0/1); a mask holds a valid (nonzero) token iff its extremes are not both 0."""
    if attention_mask.dtype == torch.bool:
        smallest, largest = attention_mask.all().to(torch.int64), attention_mask.any().to(torch.int64)
    else:
        smallest, largest = (value.to(torch.int64) for value in torch.aminmax(attention_mask))
    smallest, largest = torch.stack([smallest, largest]).tolist()
    return int(smallest != 0 or largest != 0), smallest, largest


def get_unpad_data(attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``batchspec.reference.metadata.get_unpad_data``, vectorized (SPEC.md section 2, "Packed
    metadata": outputs, dtypes, errors and clauses are there).

    The span lengths are a row sum (binary route) or one ``[B, max id + 1]`` count table in
    (row, id) order (indexed route; a per-row sort for ids far beyond the row length); the
    device is read twice (this module's docstring).
    """
    _check_mask(attention_mask)
    nonzero = attention_mask != 0
    any_valid, smallest, largest = _extremes(attention_mask)
    if not any_valid:
        raise _no_valid_token()
    binary = attention_mask.dtype == torch.bool or largest <= 1  # the route is global [unpad-binary]
    width = 2 if binary else largest + 1
    if binary:  # one span per row with a valid token: its nonzero count
        lengths = nonzero.sum(dim=1)
    elif width <= 2 * attention_mask.shape[1] + 2:
        # the indexed route: no row counts as binary; negative entries are in no span
        keyed = None if smallest >= 0 else torch.zeros((), dtype=torch.bool, device=attention_mask.device)
        lengths = _count_table(attention_mask, keyed, width)[:, 1:].flatten()  # (row, id) order
    else:  # ids far beyond the row length: sort each row so each id's tokens are adjacent
        lengths = _sorted_span_lengths(attention_mask)
    present = lengths > 0
    tokens, spans, max_seqlen = torch.stack([nonzero.sum(), present.sum(), lengths.max()]).tolist()
    indices = torch.nonzero_static(nonzero.flatten(), size=tokens).flatten()
    cu_seqlens = torch.zeros(spans + 1, dtype=torch.int32, device=attention_mask.device)
    cu_seqlens[1:] = lengths[torch.nonzero_static(present, size=spans).flatten()].cumsum(0)
    return indices, cu_seqlens, int(max_seqlen)


def _sorted_span_lengths(attention_mask: torch.Tensor) -> torch.Tensor:
    """int64 ``[B * S]``: the indexed route's span lengths in (row, id) order at each span's
    last token of the row sorted by id, 0 elsewhere (for ids too large for a count table)."""
    keys = attention_mask.to(torch.int64).clamp(min=0).sort(dim=1).values
    ends = _span_ends(keys)
    running = (keys > 0).cumsum(dim=1)
    end_totals = torch.where(ends, running, 0)
    previous = torch.cat([end_totals.new_zeros(keys.shape[0], 1), end_totals.cummax(dim=1).values[:, :-1]], dim=1)
    return torch.where(ends, running - previous, 0).flatten()


def build_packed_sequence_metadata(attention_mask: torch.Tensor) -> dict:
    """``batchspec.reference.metadata.build_packed_sequence_metadata``, vectorized (SPEC.md
    section 2, "Packed metadata": outputs, dtypes, errors and clauses are there).

    Every row's spans come from one ``[B, max id + 1]`` count table, each row on its own route
    (binary or indexed); no loop over rows, and the device is read twice (this module's
    docstring).
    """
    _check_mask(attention_mask)
    batch, sequence = attention_mask.shape
    device = attention_mask.device
    nonzero = attention_mask != 0
    packed_token_indices = torch.where(nonzero, torch.arange(sequence, device=device), -1)
    any_valid, smallest, largest = _extremes(attention_mask)
    if not any_valid:
        raise _no_valid_token()
    if smallest >= 0:
        row_binary = None  # no negative entry: each row's values are its keys
    elif attention_mask.dtype == torch.bool:
        row_binary = torch.ones(batch, 1, dtype=torch.bool, device=device)
    else:
        row_binary = attention_mask.amax(dim=1, keepdim=True) <= 1  # decided per row [meta-cu-seqlens]

    width = max(1, largest) + 1  # the output's width: the largest id + 1
    lengths = _count_table(attention_mask, row_binary, width)[:, 1:]  # [B, width - 1], (row, id) order
    present = lengths > 0
    # Each present span writes its running total into the next free column of its row; absent
    # ids write into one spare slot past the end, dropped afterwards.
    column = present.cumsum(dim=1)
    rows = torch.arange(batch, device=device)[:, None]
    target = torch.where(present, rows * width + column, batch * width)
    flat = torch.full((batch * width + 1,), -1, dtype=torch.int32, device=device)
    flat.scatter_(0, target.flatten(), lengths.cumsum(dim=1).flatten().to(torch.int32))
    cu_seqlens = flat[:-1].view(batch, width)
    cu_seqlens[:, 0] = 0
    return {
        "packed_token_indices": packed_token_indices,
        "cu_seqlens": cu_seqlens,
        "max_seqlen": int(lengths.max()),
    }


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
