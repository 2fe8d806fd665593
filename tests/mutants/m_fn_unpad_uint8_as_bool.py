"""get_unpad_data reads a uint8 mask as a legacy byte (bool) mask. Breaks: [unpad-indexed], [unpad-outputs], [unpad-precondition]

So a uint8 mask of ids > 1 takes the binary route (one span per row) instead of the indexed one;
int64, int32 and bool masks are right.
"""

import torch
from mutant_base import reference, reference_with


def get_unpad_data(attention_mask):
    if isinstance(attention_mask, torch.Tensor) and attention_mask.dtype == torch.uint8:
        attention_mask = attention_mask.bool()  # PyTorch < 1.2 masks were uint8 "byte" masks
    return reference.get_unpad_data(attention_mask)


BACKEND = reference_with("m-fn-unpad-uint8-as-bool", get_unpad_data=get_unpad_data)
