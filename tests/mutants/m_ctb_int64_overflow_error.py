"""a token or position outside int64 raises OverflowError, not ValueError. Breaks: [ctb-input-errors]"""

from mutant_base import reference, reference_with

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


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
    for record in getattr(sample_batch, "records", None) or ():
        payload = getattr(record, "payload", None) or {}
        for name in (*reference.TOKEN_FIELD_CANDIDATES, "positions"):
            values = payload.get(name)
            if isinstance(values, (list, tuple)):
                for x in values:
                    if isinstance(x, int) and not isinstance(x, bool) and not INT64_MIN <= x <= INT64_MAX:
                        raise OverflowError("Python int too large to convert to C long")
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


BACKEND = reference_with("m-ctb-int64-overflow-error", convert_text_batch=convert_text_batch)
