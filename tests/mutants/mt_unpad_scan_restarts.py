"""cu_seqlens' scan restarts at each block edge: spans past 1024 lose the earlier total. Breaks: [unpad-indexed], [unpad-binary]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-unpad-scan-restarts",
    "        carry = carry + tl.sum(values, axis=0)",
    "        carry = carry * 0",
)
