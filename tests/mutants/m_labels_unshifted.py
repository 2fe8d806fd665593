"""labels hold each token itself instead of the next one where they are not masked. Breaks: [ctb-shift]"""

import torch
from mutant_base import reference, reference_with


def convert_text_batch(sample_batch, packing_contract, ignore_index, *args, **kwargs):
    out = reference.convert_text_batch(sample_batch, packing_contract, ignore_index, *args, **kwargs)
    masked = out["labels"] == ignore_index
    out["labels"] = torch.where(masked, out["labels"], out["input_ids"])
    return out


BACKEND = reference_with("m-labels-unshifted", convert_text_batch=convert_text_batch)
