"""a record without positions gets its default positions written into its payload. Breaks: [ctb-no-mutation]"""

import numpy as np
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
    for record in sample_batch.records:
        if "positions" not in record.payload:
            field = next(name for name in reference.TOKEN_FIELD_CANDIDATES if name in record.payload)
            length = len(record.payload[field])
            padding = record.meta.padding_length or 0
            default = list(range(length - padding)) + list(range(padding))
            record.payload["positions"] = np.asarray(default, dtype=np.int64)
    return out


BACKEND = reference_with("m-ctb-fills-payload-positions", convert_text_batch=convert_text_batch)
