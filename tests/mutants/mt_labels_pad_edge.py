"""labels masked one column late: the first pad token's label keeps it. Breaks: [ctb-padding-labels], [unpacked-padding]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-labels-pad-edge",
    "    ignored = columns + 1 >= first_pad",
    "    ignored = columns + 1 > first_pad",
)
