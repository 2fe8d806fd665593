"""build_packed_sequence_metadata returns cu_seqlens as int64 instead of int32. Breaks: [meta-cu-seqlens], [tb-dtypes]"""

import torch
from mutant_base import reference, reference_with


def build_packed_sequence_metadata(attention_mask):
    out = reference.build_packed_sequence_metadata(attention_mask)
    return {**out, "cu_seqlens": out["cu_seqlens"].to(torch.int64)}


BACKEND = reference_with("m-cu-seqlens-int64", build_packed_sequence_metadata=build_packed_sequence_metadata)
