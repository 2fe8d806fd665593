"""position_ids do not restart at a later subdocument. Breaks: [ctb-positions], [ctb-xdoc], [unpacked-padding]

The xdoc output is right by chance (its positions run on anyway), so it is not what enable_xdoc_attention
makes of the xdoc-off output [ctb-xdoc]; on the unpacked route a packed row's positions are [unpacked-padding]'s.
"""

import torch
from mutant_base import converting, reference_with


def _continue(out, given):
    positions, ids = out["position_ids"], out["document_ids"]
    if positions.dim() != 2:
        return
    for b in range(positions.shape[0]):
        for i in range(1, positions.shape[1]):
            if ids[b, i] > 1 and ids[b, i] != ids[b, i - 1]:
                # the first token of subdocument 2, 3, ... keeps counting; the rest of it follows
                offset = positions[b, i - 1] + 1 - positions[b, i]
                positions[b, (ids[b] == ids[b, i])] += offset
    out["position_ids"] = positions.to(torch.int64)


BACKEND = reference_with("m-ctb-positions-not-reset", convert_text_batch=converting(_continue))
