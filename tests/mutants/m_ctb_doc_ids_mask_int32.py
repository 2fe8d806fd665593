"""the "document_ids" attention_mask is int32, not int64. Breaks: [batched-document-ids-mask], [tb-dtypes]"""

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
    if mask is not None and mask.dtype == torch.int64:
        out["attention_mask"] = mask.to(torch.int32)
    return out


BACKEND = reference_with("m-ctb-doc-ids-mask-int32", convert_text_batch=convert_text_batch)
