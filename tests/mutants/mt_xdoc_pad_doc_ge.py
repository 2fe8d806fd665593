"""the document-max table takes the pad tail too (`>= 0`). Breaks: [xdoc-positions], [ctb-xdoc], [xdoc-contract], [ctb-input-errors]

A one-character mask bug in `document_max_kernel`: slot 0 of the table, which no document owns, gets a value,
and the exclusive scan adds it below document 1.
It also declares [ctb-input-errors]: the shifted positions feed the xdoc bound check, so a valid batch
whose true largest translated position lies under `max_sequence_length` is refused with the bound error,
and SPEC's "Raising on a valid input" blames an exception on a valid input on the function's error clause
(the `test_xdoc_bound_skips_the_pad_tail*` golden cases).
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-xdoc-pad-doc-ge",
    "    tl.atomic_max(table_ptr + row * width + documents, positions, mask=inside & (documents > 0))",
    "    tl.atomic_max(table_ptr + row * width + documents, positions, mask=inside & (documents >= 0))",
)
