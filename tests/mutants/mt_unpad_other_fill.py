"""the histogram's masked tail loads other=1: each pad lane counts as a token of span 1. Breaks: [unpad-indexed], [unpad-binary]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-unpad-other-fill",
    "    values = tl.load(mask_ptr + row * stride_row + columns, mask=inside, other=0).to(tl.int64)",
    "    values = tl.load(mask_ptr + row * stride_row + columns, mask=inside, other=1).to(tl.int64)",
)
