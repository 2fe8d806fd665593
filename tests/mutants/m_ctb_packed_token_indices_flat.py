"""packed_token_indices are batch-flattened (b * S + i), not row-local. Breaks: [batched-metadata], [meta-indices]"""

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
    indices = out.get("packed_token_indices")
    if indices is not None:
        batch_size, sequence_length = indices.shape
        offset = torch.arange(batch_size, device=indices.device)[:, None] * sequence_length
        out["packed_token_indices"] = torch.where(indices >= 0, indices + offset, indices)
    return out


BACKEND = reference_with("m-ctb-packed-token-indices-flat", convert_text_batch=convert_text_batch)
