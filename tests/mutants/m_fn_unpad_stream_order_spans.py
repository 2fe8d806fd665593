"""get_unpad_data counts indexed spans as stream-order runs, not per (row, id). Breaks: [unpad-indexed], [unpad-precondition]"""

import itertools

import torch
from mutant_base import reference, reference_with


def get_unpad_data(attention_mask):
    indices, cu_seqlens, max_seqlen = reference.get_unpad_data(attention_mask)
    if attention_mask.dtype == torch.bool or int(attention_mask.max()) <= 1:
        return indices, cu_seqlens, max_seqlen
    # what unique_consecutive over each row's nonzero entries gives
    lengths = []
    for row in attention_mask.tolist():
        nonzero = [value for value in row if value != 0]
        lengths += [len(list(group)) for _, group in itertools.groupby(nonzero)]
    cumulative = [0, *itertools.accumulate(lengths)]
    cu_seqlens = torch.tensor(cumulative, dtype=torch.int32, device=attention_mask.device)
    return indices, cu_seqlens, max(lengths)


BACKEND = reference_with("m-fn-unpad-stream-order-spans", get_unpad_data=get_unpad_data)
