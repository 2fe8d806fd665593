"""the last label of every row is masked: a row ending in a document (n = 0) loses it. Breaks: [ctb-shift], [ctb-cross-document-targets]"""

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
    out["labels"][:, -1] = ignore_index
    return out


BACKEND = reference_with("m-ctb-row-end-label-masked", convert_text_batch=convert_text_batch)
