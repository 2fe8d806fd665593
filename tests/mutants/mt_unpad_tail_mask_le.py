"""tail mask columns <= sequence: a row reads one past its end. Breaks: [unpad-indexed], [unpad-binary], [unpad-precondition], [tb-layout]

The column past a row is the next row's first entry, memory past the mask, or (in a strided
view) an element outside the view: the extra count lands in any mask (those outside
[unpad-precondition]'s order too), depends on the mask's layout ([tb-layout]), and an
out-of-range value read there is an out-of-bounds ``atomic_add`` that can kill the process
(under the interpreter: a segfault, a kill blamed on every clause its test cites).
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-unpad-tail-mask-le",
    "    inside = columns < sequence",
    "    inside = columns <= sequence",
)
