"""the document-id scan restarts at each block edge: ids past column 1024 count only their block's starts. Breaks: [ctb-document-ids]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-docscan-restarts",
    "        carry = carry + tl.sum(begins, axis=0)",
    "        carry = carry * 0",
)
