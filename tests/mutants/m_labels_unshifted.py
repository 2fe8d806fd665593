"""labels hold each token itself instead of the next one where they are not masked. Breaks: [ctb-shift]"""

import torch
from mutant_base import converting, reference_with


def _unshifted(out, given):
    masked = out["labels"] == given["ignore_index"]
    out["labels"] = torch.where(masked, out["labels"], out["input_ids"])


BACKEND = reference_with("m-labels-unshifted", convert_text_batch=converting(_unshifted))
