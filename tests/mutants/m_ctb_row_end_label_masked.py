"""the last label of every row is masked: a row ending in a document (n = 0) loses it. Breaks: [ctb-shift], [ctb-cross-document-targets]"""

from mutant_base import converting, reference_with


def _mask_row_end(out, given):
    out["labels"][:, -1] = given["ignore_index"]


BACKEND = reference_with("m-ctb-row-end-label-masked", convert_text_batch=converting(_mask_row_end))
