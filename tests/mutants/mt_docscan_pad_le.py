"""document ids kept with a `<=` mask: the first pad column gets a document id. Breaks: [ctb-document-ids], [ctb-padding-mask]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-docscan-pad-le",
    "        tl.store(documents_ptr + row * sequence + columns, tl.where(columns < first_pad, documents, 0), mask=inside)",
    "        tl.store(documents_ptr + row * sequence + columns, tl.where(columns <= first_pad, documents, 0), mask=inside)",
)
