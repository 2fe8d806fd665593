"""the document offsets scan is inclusive: documents shift by their own extent. Breaks: [xdoc-positions], [ctb-xdoc], [xdoc-contract]

An off-by-one in `document_offsets_kernel`: the store drops the `- contributions` that makes the scan exclusive.
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-xdoc-inclusive-scan",
    "        tl.store(offsets_ptr + row * width + slots, totals - contributions, mask=inside)",
    "        tl.store(offsets_ptr + row * width + slots, totals, mask=inside)",
)
