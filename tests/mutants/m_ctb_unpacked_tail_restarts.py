"""unpacked route: appended pads' positions restart at 0 instead of continuing the pad tail. Breaks: [unpacked-padding]"""

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
    if pad_to_length is not None:
        positions = out["position_ids"]
        sequence_length = positions.shape[-1]
        for b, record in enumerate(sample_batch.records):
            field = next(name for name in reference.TOKEN_FIELD_CANDIDATES if name in record.payload)
            own_length = len(record.payload[field])
            if (record.meta.padding_length or 0) > 0 and own_length < sequence_length:
                count = sequence_length - own_length
                positions[b, own_length:] = torch.arange(count, dtype=positions.dtype, device=positions.device)
    return out


BACKEND = reference_with("m-ctb-unpacked-tail-restarts", convert_text_batch=convert_text_batch)
