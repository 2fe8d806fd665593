"""document_ids at padding are the last id + 1 (cumsum of position == 0), not 0. Breaks: [ctb-document-ids]"""

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
    ids = out["document_ids"]
    next_id = ids.max(dim=1, keepdim=True).values + 1
    out["document_ids"] = torch.where(out["padding_mask"], next_id.expand_as(ids), ids)
    return out


BACKEND = reference_with("m-ctb-document-ids-pad-nonzero", convert_text_batch=convert_text_batch)
