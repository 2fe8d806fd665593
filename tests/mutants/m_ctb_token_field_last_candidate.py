"""with several candidate token fields, the last one present is read, not the first. Breaks: [ctb-token-field]"""

import copy

from mutant_base import converting, reference, reference_with


def _read_the_last_candidate(call):
    if not hasattr(call["sample_batch"], "records"):
        return  # the reference reports what it is
    batch = copy.deepcopy(call["sample_batch"])  # the caller's batch stays untouched
    for record in batch.records:
        present = [name for name in reference.TOKEN_FIELD_CANDIDATES if name in record.payload]
        for name in present[:-1]:
            del record.payload[name]
    call["sample_batch"] = batch


BACKEND = reference_with(
    "m-ctb-token-field-last-candidate", convert_text_batch=converting(before=_read_the_last_candidate)
)
