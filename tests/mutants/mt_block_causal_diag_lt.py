"""the block-causal tile compares `k < q`: no token attends to itself. Breaks: [batched-block-causal]

A `<` for `<=` in `block_causal_kernel`: the diagonal of every tile on it is dropped.
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-block-causal-diag-lt",
    "    causal = keys[None, :] <= queries[:, None]",
    "    causal = keys[None, :] < queries[:, None]",
)
