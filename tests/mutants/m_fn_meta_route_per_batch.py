"""build_packed_sequence_metadata takes the whole mask's route for each row. Breaks: [meta-cu-seqlens], [unpad-precondition]"""

import itertools
from collections import Counter

import torch
from mutant_base import reference, reference_with


def build_packed_sequence_metadata(attention_mask):
    out = reference.build_packed_sequence_metadata(attention_mask)
    if attention_mask.dtype == torch.bool or int(attention_mask.max()) <= 1:
        return out  # a binary mask: every row is binary anyway
    # an indexed mask: every row counted by ids 1..max, as get_unpad_data(mask) counts it
    cu_seqlens = torch.full_like(out["cu_seqlens"], -1)
    max_seqlen = 0
    for b, row in enumerate(attention_mask.tolist()):
        counts = Counter(v for v in row if v > 0)
        lengths = [counts[k] for k in sorted(counts)]
        cumulative = [0, *itertools.accumulate(lengths)]
        cu_seqlens[b, : len(cumulative)] = torch.tensor(cumulative, dtype=cu_seqlens.dtype)
        max_seqlen = max([max_seqlen, *lengths])
    return {**out, "cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen}


BACKEND = reference_with("m-fn-meta-route-per-batch", build_packed_sequence_metadata=build_packed_sequence_metadata)
