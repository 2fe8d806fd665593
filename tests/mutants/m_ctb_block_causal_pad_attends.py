"""block_causal treats padding as a document: padding queries attend to earlier padding. Breaks: [batched-block-causal]"""

import torch
from mutant_base import reference, reference_with


def convert_text_batch(
    sample_batch,
    packing_contract,
    ignore_index,
    mask_segment_starts,
    allow_cross_document_attention,
    output_format="batched",
    pad_to_length=None,
    pad_token_id=None,
):
    out = reference.convert_text_batch(
        sample_batch,
        packing_contract,
        ignore_index,
        mask_segment_starts,
        allow_cross_document_attention,
        output_format,
        pad_to_length,
        pad_token_id,
    )
    mask = out.get("attention_mask")
    if mask is not None and mask.dtype == torch.bool and mask.ndim == 4:
        pad = out["attention_document_ids"] == 0
        size = pad.shape[1]
        causal = torch.ones(size, size, dtype=torch.bool, device=pad.device).tril()
        out["attention_mask"] = mask | (pad[:, :, None] & pad[:, None, :] & causal)[:, None]
    return out


BACKEND = reference_with("m-ctb-block-causal-pad-attends", convert_text_batch=convert_text_batch)
