"""default_collater pads list fields in an int32 buffer, so ids above the int32 range wrap. Breaks: [dcoll-fields]"""

import torch
from mutant_base import reference, reference_with


def default_collater(batch, pad_seq_len_divisible=None):
    out = reference.default_collater(batch, pad_seq_len_divisible)
    for key in out:
        values = [item.get(key) for item in batch]
        if all(isinstance(value, (list, tuple)) for value in values):
            out[key] = out[key].to(torch.int32).to(torch.int64)
    return out


BACKEND = reference_with("m-fn-dcoll-int32-roundtrip", default_collater=default_collater)
