"""a record without positions: its pad tail continues the document's positions. Breaks: [ctb-positions], [unpacked-padding]"""

import torch
from mutant_base import converting, reference_with


def _tail_continues(out, given):
    positions = out["position_ids"]
    for b, record in enumerate(given["sample_batch"].records):
        if "positions" not in record.payload:
            positions[b] = torch.arange(positions.shape[-1], dtype=positions.dtype, device=positions.device)


BACKEND = reference_with("m-ctb-no-positions-tail-continues", convert_text_batch=converting(_tail_continues))
