"""mask_segment_starts masks the label at a subdocument's first input, not its target. Breaks: [ctb-segment-starts]"""

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
    masking = mask_segment_starts is True
    if masking:
        mask_segment_starts = False  # the reference's rule is replaced by the buggy one below
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
    if masking:
        # A vectorized "start of a subdocument" test on the inputs, not on the targets.
        ids = out["document_ids"]
        starts = ids > 0
        starts[:, 1:] &= ids[:, 1:] != ids[:, :-1]
        out["labels"] = torch.where(starts, torch.full_like(out["labels"], ignore_index), out["labels"])
    return out


BACKEND = reference_with("m-ctb-segment-starts-on-inputs", convert_text_batch=convert_text_batch)
