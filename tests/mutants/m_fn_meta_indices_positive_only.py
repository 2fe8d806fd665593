"""packed_token_indices mark mask > 0, not != 0: negative entries get -1. Breaks: [meta-indices], [unpad-precondition]"""

import torch
from mutant_base import reference, reference_with


def build_packed_sequence_metadata(attention_mask):
    out = reference.build_packed_sequence_metadata(attention_mask)
    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
    return {**out, "packed_token_indices": torch.where(attention_mask > 0, positions, -1)}


BACKEND = reference_with(
    "m-fn-meta-indices-positive-only", build_packed_sequence_metadata=build_packed_sequence_metadata
)
