"""`<=` pad mask on document ids. Breaks: [ctb-document-ids], [batched-block-causal], [batched-document-ids-mask], [thd-lengths]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-docscan-pad-le",
    "        tl.store(documents_ptr + row * sequence + columns, tl.where(columns < first_pad, documents, 0), mask=inside)",
    "        tl.store(documents_ptr + row * sequence + columns, tl.where(columns <= first_pad, documents, 0), mask=inside)",
)
