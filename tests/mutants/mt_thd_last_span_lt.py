"""the THD lengths keep spans `k + 1 < spans`: each row's last span is written as padding. Breaks: [thd-lengths]

A `<` for `<=` in `thd_lengths_kernel`.
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-thd-last-span-lt",
    "    seq_lens = tl.where(slots + 1 <= spans, lengths, pad_value)",
    "    seq_lens = tl.where(slots + 1 < spans, lengths, pad_value)",
)
