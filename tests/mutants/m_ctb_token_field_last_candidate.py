"""with several candidate token fields, the last one present is read, not the first. Breaks: [ctb-token-field]"""

import copy

from mutant_base import converting, reference_with, token_field


def _read_the_last_candidate(call):
    if not hasattr(call["sample_batch"], "records"):
        return  # the reference reports what it is
    batch = copy.deepcopy(call["sample_batch"])  # the caller's batch stays untouched
    for record in batch.records:
        while any(name in record.payload for name in ("input_ids", "tokens", "token_ids", "ids")):
            first = token_field(record)
            rest = [name for name in ("tokens", "token_ids", "ids") if name in record.payload and name != first]
            if not rest:
                break
            del record.payload[first]
    call["sample_batch"] = batch


BACKEND = reference_with(
    "m-ctb-token-field-last-candidate", convert_text_batch=converting(before=_read_the_last_candidate)
)
