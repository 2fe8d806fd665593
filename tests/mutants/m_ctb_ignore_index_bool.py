"""ignore_index=True/False is accepted as the int 1/0 (isinstance(True, int)) instead of raising TypeError. Breaks: [ctb-option-types]"""

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
    if isinstance(ignore_index, bool):
        ignore_index = int(ignore_index)
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


BACKEND = reference_with("m-ctb-ignore-index-bool", convert_text_batch=convert_text_batch)
