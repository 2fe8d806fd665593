"""default positions restart one column late: the first pad column keeps its index. Breaks: [ctb-positions], [unpacked-padding]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-positions-pad-edge",
    "    values = tl.where(columns >= first_pad, columns - first_pad, columns).to(tl.int64)",
    "    values = tl.where(columns > first_pad, columns - first_pad, columns).to(tl.int64)",
)
