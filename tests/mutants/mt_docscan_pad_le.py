"""`<=` pad mask on document ids. Breaks: [ctb-document-ids], [batched-block-causal], [batched-document-ids-mask], [thd-lengths],
[ctb-positions], [xdoc-contract], [ctb-input-errors]

The first pad column keeps the last document's id. Under xdoc that column joins the last document, so
its position is translated as the document's next coordinate ([ctb-positions] covers padding's
positions), and the largest translated position grows by one: a valid batch at the bound is refused
with the bound's ValueError ([xdoc-contract]; SPEC's "Raising on a valid input" blames an exception on
valid input on [ctb-input-errors]). Seen in the 2026-12-05 named run: 4 of 83 kills.
"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-docscan-pad-le",
    "        tl.store(documents_ptr + row * sequence + columns, tl.where(columns < first_pad, documents, 0), mask=inside)",
    "        tl.store(documents_ptr + row * sequence + columns, tl.where(columns <= first_pad, documents, 0), mask=inside)",
)
