"""get_unpad_data keeps a zero-length span for every all-zero row of a binary mask. Breaks: [unpad-binary]"""

import itertools

import torch
from mutant_base import reference, reference_with


def get_unpad_data(attention_mask):
    indices, cu_seqlens, max_seqlen = reference.get_unpad_data(attention_mask)
    if attention_mask.dtype == torch.bool or int(attention_mask.max()) <= 1:
        # one span per row, also for rows without a valid token
        row_lengths = [int(row.bool().sum()) for row in attention_mask]
        cumulative = [0, *itertools.accumulate(row_lengths)]
        cu_seqlens = torch.tensor(cumulative, dtype=torch.int32, device=attention_mask.device)
    return indices, cu_seqlens, max_seqlen


BACKEND = reference_with("m-fn-unpad-keeps-empty-rows", get_unpad_data=get_unpad_data)
