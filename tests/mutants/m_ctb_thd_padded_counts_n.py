"""THD seq_lens_padded adds n, not the n - 1 padded inputs, to the last span. Breaks: [thd-lengths]"""

from mutant_base import reference, reference_with


def _padding_counts(sample_batch, length):
    """Each row's trailing padding count n after the unpacked route's padding to `length`."""
    counts = []
    for record in sample_batch.records:
        field = next(name for name in reference.TOKEN_FIELD_CANDIDATES if name in record.payload)
        counts.append((record.meta.padding_length or 0) + length - len(record.payload[field]))
    return counts


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
    padded = out.get("seq_lens_padded")
    if padded is not None:
        length = out["input_ids"].shape[1] + 1
        for b, n in enumerate(_padding_counts(sample_batch, length)):
            if n >= 1:
                last = int((padded[b] != reference.THD_LENGTH_PAD).sum()) - 1
                padded[b, last] += 1
    return out


BACKEND = reference_with("m-ctb-thd-padded-counts-n", convert_text_batch=convert_text_batch)
