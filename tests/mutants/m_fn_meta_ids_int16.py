"""build_packed_sequence_metadata counts spans of the mask cast to int16. Breaks: [meta-cu-seqlens], [meta-max-seqlen]"""

import torch
from mutant_base import reference, reference_with


def build_packed_sequence_metadata(attention_mask):
    out = reference.build_packed_sequence_metadata(attention_mask)  # packed_token_indices from mask != 0
    if attention_mask.dtype == torch.bool:
        return out
    narrowed = attention_mask.to(torch.int16)  # the (row, id) count table's keys
    if not bool((narrowed != 0).any()):
        return out
    spans = reference.build_packed_sequence_metadata(narrowed)
    return {**out, "cu_seqlens": spans["cu_seqlens"], "max_seqlen": spans["max_seqlen"]}


BACKEND = reference_with("m-fn-meta-ids-int16", build_packed_sequence_metadata=build_packed_sequence_metadata)
