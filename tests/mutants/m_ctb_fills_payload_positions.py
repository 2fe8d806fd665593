"""a record without positions gets its default positions written into its payload. Breaks: [ctb-no-mutation]"""

import numpy as np
from mutant_base import converting, reference_with, token_field


def _fill_positions(out, given):
    for record in given["sample_batch"].records:
        if "positions" not in record.payload:
            length = len(record.payload[token_field(record)])
            padding = record.meta.padding_length or 0
            default = list(range(length - padding)) + list(range(padding))
            record.payload["positions"] = np.asarray(default, dtype=np.int64)


BACKEND = reference_with("m-ctb-fills-payload-positions", convert_text_batch=converting(_fill_positions))
