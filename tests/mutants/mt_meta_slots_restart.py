"""cu_seqlens' slot count restarts at each block of 1024 ids: later spans overwrite the first slots. Breaks: [meta-cu-seqlens]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-meta-slots-restart",
    "        spans = spans + tl.sum(present.to(tl.int64), axis=0)",
    "        spans = spans * 0",
)
