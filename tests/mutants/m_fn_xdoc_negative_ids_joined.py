"""enable_xdoc_attention joins every nonzero attention id to 1, so a negative id becomes 1 instead of 0. Breaks: [xdoc-attention-ids]"""

import torch
from mutant_base import reference, reference_with


def enable_xdoc_attention(batch, packing_contract):
    ids = batch.get("attention_document_ids")
    negative = ids < 0 if isinstance(ids, torch.Tensor) else None
    out = reference.enable_xdoc_attention(batch, packing_contract)
    if negative is not None and bool(negative.any()):
        out["attention_document_ids"][negative] = 1  # (ids != 0) instead of (ids > 0)
    return out


BACKEND = reference_with("m-fn-xdoc-negative-ids-joined", enable_xdoc_attention=enable_xdoc_attention)
