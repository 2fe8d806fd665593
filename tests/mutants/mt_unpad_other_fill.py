"""the histogram's masked tail loads other=1: pad lanes count in span 1. Breaks: [unpad-indexed], [unpad-binary], [unpad-precondition]

Every row shorter than a multiple of the block gets the tail's lanes counted, masks outside
[unpad-precondition]'s order too (a negative entry, ids out of order), where that clause
requires the exact outputs.
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-unpad-other-fill",
    "    values = tl.load(mask_ptr + row * stride_row + columns, mask=inside, other=0).to(tl.int64)",
    "    values = tl.load(mask_ptr + row * stride_row + columns, mask=inside, other=1).to(tl.int64)",
)
