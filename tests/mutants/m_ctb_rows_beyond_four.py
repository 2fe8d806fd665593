"""rows b >= 4 keep the label of their last real input (target: the first pad). Breaks: [ctb-padding-labels]"""

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
    if mask_segment_starts is False:  # with it on, the pad tail's position 0 masks that label anyway
        labels, inputs = out["labels"], out["input_ids"]
        length = labels.shape[1] + 1
        for b, n in enumerate(_padding_counts(sample_batch, length)):
            if b >= 4 and n >= 1:
                first_pad = length - n
                if first_pad < length - 1:
                    labels[b, first_pad - 1] = inputs[b, first_pad]
                else:  # the target is the row's last unshifted token
                    record = sample_batch.records[b]
                    field = next(name for name in reference.TOKEN_FIELD_CANDIDATES if name in record.payload)
                    tokens = record.payload[field]
                    labels[b, first_pad - 1] = int(tokens[-1]) if len(tokens) == length else pad_token_id
    return out


BACKEND = reference_with("m-ctb-rows-beyond-four", convert_text_batch=convert_text_batch)
