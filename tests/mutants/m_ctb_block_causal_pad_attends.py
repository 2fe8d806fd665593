"""block_causal treats padding as a document: padding queries attend to earlier padding. Breaks: [batched-block-causal]"""

import torch
from mutant_base import converting, reference_with


def _pad_attends(out, given):
    mask = out.get("attention_mask")
    if mask is not None and mask.dtype == torch.bool and mask.ndim == 4:
        pad = out["attention_document_ids"] == 0
        size = pad.shape[1]
        causal = torch.ones(size, size, dtype=torch.bool, device=pad.device).tril()
        out["attention_mask"] = mask | (pad[:, :, None] & pad[:, None, :] & causal)[:, None]


BACKEND = reference_with("m-ctb-block-causal-pad-attends", convert_text_batch=converting(_pad_attends))
