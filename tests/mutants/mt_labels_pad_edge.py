"""labels masked one column late: the label whose target is the row's first pad token keeps that token. Breaks: [ctb-padding-labels]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-labels-pad-edge",
    "    ignored = columns + 1 >= first_pad",
    "    ignored = columns + 1 > first_pad",
)
