"""without xdoc, attention_document_ids is the document_ids tensor itself, not a copy. Breaks: [tb-no-aliasing]"""

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
    if allow_cross_document_attention is False:
        out["attention_document_ids"] = out["document_ids"]
    return out


BACKEND = reference_with("m-ctb-attention-ids-alias", convert_text_batch=convert_text_batch)
