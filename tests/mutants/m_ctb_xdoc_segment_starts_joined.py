"""under xdoc, segment starts are judged on the joined positions: none is masked. Breaks: [ctb-xdoc], [ctb-segment-starts]"""

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
    if allow_cross_document_attention is True and mask_segment_starts is True:
        # Continuous positions are 0 only at the row start and in the pad tail, whose labels
        # are padding labels anyway: the same as not masking segment starts at all.
        mask_segment_starts = False
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


BACKEND = reference_with("m-ctb-xdoc-segment-starts-joined", convert_text_batch=convert_text_batch)
