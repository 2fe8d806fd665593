"""The Triton kernels of the ``triton`` backend, written for a GPU (SPEC.md section 2).

Each kernel covers one row per program along axis 0 and one ``BLOCK`` of columns per program
along axis 1 (or loops over a row in ``BLOCK``-wide steps), with a masked tail, so rows longer
than one block and lengths that are not a multiple of the block are the normal case. On CPU
they run only under Triton's interpreter (``TRITON_INTERPRET=1``, see ``__init__``).
"""

from __future__ import annotations

import triton
import triton.language as tl

# GPU-sized blocks: 1024 int64 lanes per program (eight warps of 128-lane vectors).
BLOCK = 1024


@triton.jit
def span_count_kernel(mask_ptr, table_ptr, sequence, width, stride_row, binary: tl.constexpr, BLOCK: tl.constexpr):
    """Histogram of span keys per row: ``table[b, k] += 1`` for each token of key ``k`` in row
    ``b`` [unpad-binary, unpad-indexed]. ``binary``: key 1 for each nonzero entry; otherwise the
    entry itself; zero and negative entries (key 0) are not counted."""
    row = tl.program_id(0)
    block = tl.program_id(1)
    columns = block * BLOCK + tl.arange(0, BLOCK)
    inside = columns < sequence
    values = tl.load(mask_ptr + row * stride_row + columns, mask=inside, other=0).to(tl.int64)
    if binary:
        keys = (values != 0).to(tl.int64)
    else:
        keys = tl.maximum(values, 0)
    # the tail's lanes load 0, key 0: only keys > 0 are counted (column 0 is never read)
    tl.atomic_add(table_ptr + row * width + keys, tl.full([BLOCK], 1, tl.int64), mask=keys > 0)


@triton.jit
def exclusive_scan_kernel(lengths_ptr, out_ptr, count, BLOCK: tl.constexpr):
    """``out[0] = 0``, ``out[i + 1] = lengths[0] + ... + lengths[i]`` (int32) for ``count``
    lengths: one program walks the blocks carrying the running total across block edges
    [unpad-indexed]."""
    carry = tl.zeros([], dtype=tl.int64)
    tl.store(out_ptr, carry.to(tl.int32))
    for start in range(0, count, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        inside = offsets < count
        values = tl.load(lengths_ptr + offsets, mask=inside, other=0).to(tl.int64)
        totals = tl.cumsum(values, axis=0) + carry
        tl.store(out_ptr + offsets + 1, totals.to(tl.int32), mask=inside)
        carry = carry + tl.sum(values, axis=0)


@triton.jit
def default_positions_kernel(first_pad_ptr, positions_ptr, width, BLOCK: tl.constexpr):
    """Positions of a row without given positions: ``c`` over its real tokens, ``c - first_pad[b]``
    from its first pad column on (the pad tail restarts at 0) [ctb-positions, unpacked-padding].
    ``positions`` int64 ``[B, width]``; one program per row and ``BLOCK`` of columns."""
    row = tl.program_id(0)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = columns < width
    first_pad = tl.load(first_pad_ptr + row)
    values = tl.where(columns >= first_pad, columns - first_pad, columns).to(tl.int64)
    tl.store(positions_ptr + row * width + columns, values, mask=inside)


@triton.jit
def document_scan_kernel(
    positions_ptr, first_pad_ptr, documents_ptr, starts_ptr, sequence, stride_row, BLOCK: tl.constexpr
):
    """Segmented scan of one row per program over ``sequence = S`` columns in ``BLOCK`` steps,
    carrying the count of segment starts across block edges: ``documents[b, i]`` = the number of
    ``j <= i`` with ``positions[b, j] == 0``, 0 from the row's first pad column on
    [ctb-boundaries-from-zeros, ctb-document-ids]; ``starts[b, i] = positions[b, i + 1] == 0``, the
    target's segment start [ctb-segment-starts]. ``positions`` int64 ``[B, S + 1]`` (row stride ``stride_row``)."""
    row = tl.program_id(0)
    first_pad = tl.load(first_pad_ptr + row)
    carry = tl.zeros([], dtype=tl.int64)
    for start in range(0, sequence, BLOCK):
        columns = start + tl.arange(0, BLOCK)
        inside = columns < sequence
        positions = tl.load(positions_ptr + row * stride_row + columns, mask=inside, other=1)
        begins = (positions == 0).to(tl.int64)
        documents = tl.cumsum(begins, axis=0) + carry
        tl.store(documents_ptr + row * sequence + columns, tl.where(columns < first_pad, documents, 0), mask=inside)
        following = tl.load(positions_ptr + row * stride_row + columns + 1, mask=inside, other=1)
        tl.store(starts_ptr + row * sequence + columns, following == 0, mask=inside)
        carry = carry + tl.sum(begins, axis=0)


@triton.jit
def shifted_labels_kernel(
    tokens_ptr,
    starts_ptr,
    first_pad_ptr,
    labels_ptr,
    padding_ptr,
    sequence,
    stride_row,
    ignore_index,
    mask_segment_starts: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """``labels[b, i] = tokens[b, i + 1]``, or ``ignore_index`` where the target is padding
    (``i + 1 >= first_pad[b]``) or, with ``mask_segment_starts``, a segment start
    (``starts[b, i]``); ``padding[b, i] = i >= first_pad[b]`` [ctb-shift, ctb-padding-labels,
    ctb-cross-document-targets, ctb-segment-starts, ctb-ignore-index, ctb-padding-mask]. One
    program per row and ``BLOCK`` of the ``S`` columns."""
    row = tl.program_id(0)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = columns < sequence
    first_pad = tl.load(first_pad_ptr + row)
    targets = tl.load(tokens_ptr + row * stride_row + columns + 1, mask=inside, other=0)
    ignored = columns + 1 >= first_pad
    if mask_segment_starts:
        ignored = ignored | tl.load(starts_ptr + row * sequence + columns, mask=inside, other=0)
    tl.store(labels_ptr + row * sequence + columns, tl.where(ignored, ignore_index, targets), mask=inside)
    tl.store(padding_ptr + row * sequence + columns, columns >= first_pad, mask=inside)


@triton.jit
def row_span_count_kernel(
    mask_ptr, table_ptr, indices_ptr, sequence, width, stride_row, all_binary: tl.constexpr, BLOCK: tl.constexpr
):
    """Per-row span histogram of ``build_packed_sequence_metadata``, one program per row in
    ``BLOCK`` steps: a first pass finds the row's largest entry (the row is binary when it is
    <= 1, or when ``all_binary``, a bool mask) [meta-cu-seqlens]; the second counts each token
    under its key (1 for a nonzero entry of a binary row, else the entry; keys <= 0 are not
    counted) into ``table[b, key]`` and writes ``indices[b, i]``: ``i`` for a nonzero entry, else
    -1 [meta-indices]."""
    row = tl.program_id(0)
    largest = tl.zeros([], dtype=tl.int64)
    if not all_binary:
        for start in range(0, sequence, BLOCK):
            columns = start + tl.arange(0, BLOCK)
            values = tl.load(mask_ptr + row * stride_row + columns, mask=columns < sequence, other=0).to(tl.int64)
            largest = tl.maximum(largest, tl.max(values, axis=0))
    binary = largest <= 1  # a bool mask skips the first pass: largest stays 0
    for start in range(0, sequence, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        valid = offsets < sequence
        entries = tl.load(mask_ptr + row * stride_row + offsets, mask=valid, other=0).to(tl.int64)
        keys = tl.where(binary, (entries != 0).to(tl.int64), tl.maximum(entries, 0))
        tl.atomic_add(table_ptr + row * width + keys, tl.full([BLOCK], 1, tl.int64), mask=valid & (keys > 0))
        tl.store(indices_ptr + row * sequence + offsets, tl.where(entries != 0, offsets.to(tl.int64), -1), mask=valid)


@triton.jit
def row_cu_seqlens_kernel(table_ptr, cu_seqlens_ptr, longest_ptr, width, BLOCK: tl.constexpr):
    """Per row, the present spans' running totals packed to the front of ``cu_seqlens[b]``
    (int32 ``[B, width]``, filled with -1 and ``cu_seqlens[b, 0] = 0`` beforehand): one program
    per row walks keys ``1 .. width - 1`` of ``table`` in ``BLOCK`` steps, carrying the number of
    present spans and the total across block edges [meta-cu-seqlens]; ``longest`` (int64
    ``[1]``) gets the largest span [meta-max-seqlen]."""
    row = tl.program_id(0)
    spans = tl.zeros([], dtype=tl.int64)
    total = tl.zeros([], dtype=tl.int64)
    for start in range(1, width, BLOCK):
        keys = start + tl.arange(0, BLOCK)
        lengths = tl.load(table_ptr + row * width + keys, mask=keys < width, other=0)
        present = lengths > 0
        slots = tl.cumsum(present.to(tl.int64), axis=0) + spans
        totals = tl.cumsum(lengths, axis=0) + total
        tl.store(cu_seqlens_ptr + row * width + slots, totals.to(tl.int32), mask=present)
        tl.atomic_max(longest_ptr, tl.max(lengths, axis=0))
        spans = spans + tl.sum(present.to(tl.int64), axis=0)
        total = total + tl.sum(lengths, axis=0)


# Query and key tile of the block-causal mask: 64 x 64 bool lanes per program.
TILE = 64


@triton.jit
def document_max_kernel(positions_ptr, documents_ptr, table_ptr, sequence, width, BLOCK: tl.constexpr):
    """``table[b, d]`` = the largest position of document ``d > 0`` of row ``b`` (``table``
    int64 ``[B, width]`` filled with -1 beforehand; -1 stays for an absent document), by
    ``atomic_max`` from one program per row and ``BLOCK`` of the ``S = sequence`` columns of
    ``positions`` and ``documents`` (int64 ``[B, S]``) [xdoc-positions]."""
    row = tl.program_id(0)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = columns < sequence
    documents = tl.load(documents_ptr + row * sequence + columns, mask=inside, other=0)
    positions = tl.load(positions_ptr + row * sequence + columns, mask=inside, other=0)
    tl.atomic_max(table_ptr + row * width + documents, positions, mask=inside & (documents > 0))


@triton.jit
def document_offsets_kernel(table_ptr, offsets_ptr, width, BLOCK: tl.constexpr):
    """``offsets[b, d]`` = the sum over the row's documents ``d' < d`` of ``table[b, d'] + 1``
    (0 for an absent one): an exclusive scan of one row per program in ``BLOCK`` steps, carrying
    the total across block edges [xdoc-positions]. ``table``, ``offsets`` int64 ``[B, width]``."""
    row = tl.program_id(0)
    carry = tl.zeros([], dtype=tl.int64)
    for start in range(0, width, BLOCK):
        slots = start + tl.arange(0, BLOCK)
        inside = slots < width
        contributions = tl.load(table_ptr + row * width + slots, mask=inside, other=-1) + 1
        totals = tl.cumsum(contributions, axis=0) + carry
        tl.store(offsets_ptr + row * width + slots, totals - contributions, mask=inside)
        carry = carry + tl.sum(contributions, axis=0)


@triton.jit
def xdoc_shift_kernel(
    positions_ptr, documents_ptr, offsets_ptr, out_ptr, largest_ptr, sequence, width, BLOCK: tl.constexpr
):
    """``out[b, i] = positions[b, i] + offsets[b, documents[b, i]]`` where ``documents[b, i] > 0``
    (a translated token), else ``positions[b, i]`` [xdoc-positions]; ``largest`` (int64 ``[1]``,
    -1 beforehand) gets the largest translated position, for the bound [xdoc-contract]. One
    program per row and ``BLOCK`` of the ``S`` columns."""
    row = tl.program_id(0)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = columns < sequence
    documents = tl.load(documents_ptr + row * sequence + columns, mask=inside, other=0)
    positions = tl.load(positions_ptr + row * sequence + columns, mask=inside, other=0)
    translated = inside & (documents > 0)
    shift = tl.load(offsets_ptr + row * width + documents, mask=translated, other=0)
    shifted = positions + shift
    tl.store(out_ptr + row * sequence + columns, shifted, mask=inside)
    tl.atomic_max(largest_ptr, tl.max(tl.where(translated, shifted, -1), axis=0))


@triton.jit
def id_counts_kernel(
    ids_ptr, counts_ptr, spans_ptr, indices_ptr, sequence, write_indices: tl.constexpr, BLOCK: tl.constexpr
):
    """Per row ``b`` and ``BLOCK`` of the ``S = sequence`` columns of ``ids`` (int64 ``[B, S]``,
    in ``[0, S]``): ``counts[b, k] += 1`` for each token of id ``k`` (int64 ``[B, S + 1]``, zeros
    beforehand; column 0 counts the zeros), ``spans[b]`` = the row's largest id (``atomic_max``,
    zeros beforehand) [thd-lengths, meta-cu-seqlens]; with ``write_indices``, ``indices[b, i]`` =
    ``i`` where ``ids[b, i] > 0``, else -1 [meta-indices]."""
    row = tl.program_id(0)
    columns = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = columns < sequence
    ids = tl.load(ids_ptr + row * sequence + columns, mask=inside, other=0)
    tl.atomic_add(counts_ptr + row * (sequence + 1) + ids, tl.full([BLOCK], 1, tl.int64), mask=inside)
    tl.atomic_max(spans_ptr + row, tl.max(ids, axis=0))
    if write_indices:
        tl.store(indices_ptr + row * sequence + columns, tl.where(ids > 0, columns.to(tl.int64), -1), mask=inside)


@triton.jit
def thd_lengths_kernel(
    counts_ptr, spans_ptr, seq_lens_ptr, padded_ptr, sequence, width, pad_value, BLOCK: tl.constexpr
):
    """THD lengths per row ``b`` and ``BLOCK`` of slots ``k = 0 .. width - 1`` [thd-lengths]:
    ``seq_lens[b, k] = counts[b, k + 1]`` (span ``k`` is id ``k + 1``) for ``k + 1 <= spans[b]``,
    else ``pad_value``; ``seq_lens_padded`` adds the row's trailing zeros (``counts[b, 0]``) to
    its last span. ``counts`` int64 ``[B, sequence + 1]``; outputs int64 ``[B, width]``."""
    row = tl.program_id(0)
    slots = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = slots < width
    spans = tl.load(spans_ptr + row)
    lengths = tl.load(counts_ptr + row * (sequence + 1) + slots + 1, mask=inside, other=0)
    seq_lens = tl.where(slots + 1 <= spans, lengths, pad_value)
    trailing = tl.load(counts_ptr + row * (sequence + 1))
    tl.store(seq_lens_ptr + row * width + slots, seq_lens, mask=inside)
    tl.store(padded_ptr + row * width + slots, seq_lens + tl.where(slots + 1 == spans, trailing, 0), mask=inside)


@triton.jit
def block_causal_kernel(ids_ptr, mask_ptr, sequence, TILE: tl.constexpr):
    """One ``TILE x TILE`` tile of the block-causal mask per program (row, query tile, key tile):
    ``mask[b, q, k] = k <= q and ids[b, q] == ids[b, k] > 0`` [batched-block-causal]. ``ids``
    int64 ``[B, S]``; ``mask`` bool ``[B, S, S]`` (the ``[B, 1, S, S]`` output's storage)."""
    row = tl.program_id(0)
    queries = tl.program_id(1) * TILE + tl.arange(0, TILE)
    keys = tl.program_id(2) * TILE + tl.arange(0, TILE)
    query_in = queries < sequence
    key_in = keys < sequence
    query_ids = tl.load(ids_ptr + row * sequence + queries, mask=query_in, other=0)
    key_ids = tl.load(ids_ptr + row * sequence + keys, mask=key_in, other=0)
    same = (query_ids[:, None] == key_ids[None, :]) & (query_ids[:, None] > 0)
    causal = keys[None, :] <= queries[:, None]
    inside = query_in[:, None] & key_in[None, :]
    offsets = row.to(tl.int64) * sequence * sequence + queries[:, None] * sequence + keys[None, :]
    tl.store(mask_ptr + offsets, same & causal, mask=inside)
