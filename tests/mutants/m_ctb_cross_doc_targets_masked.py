"""targets that start a subdocument are masked even with mask_segment_starts=False. Breaks: [ctb-cross-document-targets]"""

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
    if mask_segment_starts is False:
        mask_segment_starts = True
    return reference.convert_text_batch(
        sample_batch,
        packing_contract,
        ignore_index,
        mask_segment_starts,
        allow_cross_document_attention,
        output_format,
        pad_to_length,
        pad_token_id,
    )


BACKEND = reference_with("m-ctb-cross-doc-targets-masked", convert_text_batch=convert_text_batch)
