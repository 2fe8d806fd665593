"""mask_segment_starts masks the label at a subdocument's first input, not its target. Breaks: [ctb-segment-starts], [ctb-shift]"""

import torch
from mutant_base import converting, reference_with


def _reference_rule_off(call):
    if call["mask_segment_starts"] is True:
        call["mask_segment_starts"] = False  # the reference's rule is replaced by the buggy one below


def _mask_first_inputs(out, given):
    if given["mask_segment_starts"] is True:
        # A vectorized "start of a subdocument" test on the inputs, not on the targets.
        ids = out["document_ids"]
        starts = ids > 0
        starts[:, 1:] &= ids[:, 1:] != ids[:, :-1]
        out["labels"] = torch.where(starts, torch.full_like(out["labels"], given["ignore_index"]), out["labels"])


BACKEND = reference_with(
    "m-ctb-segment-starts-on-inputs", convert_text_batch=converting(_mask_first_inputs, before=_reference_rule_off)
)
