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
