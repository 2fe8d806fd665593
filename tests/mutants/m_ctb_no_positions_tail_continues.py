"""a record without positions: its pad tail continues the document's positions. Breaks: [ctb-positions], [unpacked-padding]"""

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
    positions = out["position_ids"]
    for b, record in enumerate(sample_batch.records):
        if "positions" not in record.payload:
            positions[b] = torch.arange(positions.shape[-1], dtype=positions.dtype, device=positions.device)
    return out


BACKEND = reference_with("m-ctb-no-positions-tail-continues", convert_text_batch=convert_text_batch)
