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
