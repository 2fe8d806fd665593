"""the document-max table takes padding too (`>= 0`): docs shift past the pad tail. Breaks: [xdoc-positions], [ctb-xdoc], [xdoc-contract]

A one-character mask bug in `document_max_kernel`: slot 0 of the table, which no document owns, gets a value,
and the exclusive scan adds it below document 1.
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-xdoc-pad-doc-ge",
    "    tl.atomic_max(table_ptr + row * width + documents, positions, mask=inside & (documents > 0))",
    "    tl.atomic_max(table_ptr + row * width + documents, positions, mask=inside & (documents >= 0))",
)
