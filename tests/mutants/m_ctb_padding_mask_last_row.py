"""padding_mask of the last row is all False (the row loop that marks padding stops one row short). Breaks: [ctb-padding-mask]"""

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
    out["padding_mask"][-1] = False
    return out


BACKEND = reference_with("m-ctb-padding-mask-last-row", convert_text_batch=convert_text_batch)
