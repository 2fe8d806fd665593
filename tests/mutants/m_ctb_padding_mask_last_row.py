"""padding_mask of the last row is all False (the row loop that marks padding stops one row short). Breaks: [ctb-padding-mask]"""

from mutant_base import converting, reference_with


def _last_row_unmasked(out, given):
    out["padding_mask"][-1] = False


BACKEND = reference_with("m-ctb-padding-mask-last-row", convert_text_batch=converting(_last_row_unmasked))
