"""_packed_seq_ids copy document_ids, not the xdoc-joined selected ids. Breaks: [batched-packed-seq-ids], [ctb-selected-ids]"""

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
    if "_packed_seq_ids" in out:
        out["_packed_seq_ids"] = out["document_ids"].clone()
    return out


BACKEND = reference_with("m-ctb-packed-seq-ids-unjoined", convert_text_batch=convert_text_batch)
