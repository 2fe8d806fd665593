"""the id histogram's tail mask uses `<=`: the lane at column S (loaded with other=0) counts as a trailing zero. Breaks: [thd-lengths]

`id_counts_kernel`'s atomic add runs one lane past the row, and the `other=0` fill leaks into the zero column: the
last span of seq_lens_padded grows by one in every row whose length is not a multiple of the block.
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-thd-counts-tail-le",
    "    tl.atomic_add(counts_ptr + row * (sequence + 1) + ids, tl.full([BLOCK], 1, tl.int64), mask=inside)",
    "    tl.atomic_add(counts_ptr + row * (sequence + 1) + ids, tl.full([BLOCK], 1, tl.int64), mask=columns <= sequence)",
)
