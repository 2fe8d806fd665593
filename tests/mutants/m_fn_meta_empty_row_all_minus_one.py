"""build_packed_sequence_metadata leaves a row with no valid token all -1 in cu_seqlens (no 0 at column 0). Breaks: [meta-cu-seqlens]"""

from mutant_base import reference, reference_with


def build_packed_sequence_metadata(attention_mask):
    out = reference.build_packed_sequence_metadata(attention_mask)
    cu_seqlens = out["cu_seqlens"].clone()
    empty = ~attention_mask.bool().any(dim=1)
    cu_seqlens[empty] = -1
    return {**out, "cu_seqlens": cu_seqlens}


BACKEND = reference_with(
    "m-fn-meta-empty-row-all-minus-one", build_packed_sequence_metadata=build_packed_sequence_metadata
)
