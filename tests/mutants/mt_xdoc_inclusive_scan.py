"""the document offsets scan is inclusive (own extent added). Breaks: [xdoc-positions], [ctb-xdoc], [xdoc-contract], [ctb-input-errors]

An off-by-one in `document_offsets_kernel`: the store drops the `- contributions` that makes the scan exclusive.
It also declares [ctb-input-errors]: the shifted positions feed the xdoc bound check, so a valid batch
whose true largest translated position lies under `max_sequence_length` can be refused with the bound
error, which SPEC's "Raising on a valid input" blames on the function's error clause.
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-xdoc-inclusive-scan",
    "        tl.store(offsets_ptr + row * width + slots, totals - contributions, mask=inside)",
    "        tl.store(offsets_ptr + row * width + slots, totals, mask=inside)",
)
