"""the histogram's tail mask is columns <= sequence: one column past each row is counted. Breaks: [unpad-indexed], [unpad-binary]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-unpad-tail-mask-le",
    "    inside = columns < sequence",
    "    inside = columns <= sequence",
)
