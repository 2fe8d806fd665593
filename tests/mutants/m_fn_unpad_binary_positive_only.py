"""get_unpad_data's binary spans count entries > 0, not != 0. Breaks: [unpad-binary], [unpad-precondition]"""

import itertools

import torch
from mutant_base import reference, reference_with


def get_unpad_data(attention_mask):
    indices, cu_seqlens, max_seqlen = reference.get_unpad_data(attention_mask)
    if attention_mask.dtype == torch.bool or int(attention_mask.max()) > 1:
        return indices, cu_seqlens, max_seqlen
    lengths = [int(n) for n in (attention_mask > 0).sum(dim=1) if n > 0]
    cumulative = [0, *itertools.accumulate(lengths)]
    cu_seqlens = torch.tensor(cumulative, dtype=torch.int32, device=attention_mask.device)
    return indices, cu_seqlens, max(lengths, default=0)


BACKEND = reference_with("m-fn-unpad-binary-positive-only", get_unpad_data=get_unpad_data)
