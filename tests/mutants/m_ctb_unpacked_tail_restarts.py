"""unpacked route: appended pads' positions restart at 0 instead of continuing the pad tail. Breaks: [unpacked-padding]"""

import torch
from mutant_base import converting, reference_with, token_field


def _tail_restarts(out, given):
    if given["pad_to_length"] is not None:
        positions = out["position_ids"]
        sequence_length = positions.shape[-1]
        for b, record in enumerate(given["sample_batch"].records):
            own_length = len(record.payload[token_field(record)])
            if (record.meta.padding_length or 0) > 0 and own_length < sequence_length:
                count = sequence_length - own_length
                positions[b, own_length:] = torch.arange(count, dtype=positions.dtype, device=positions.device)


BACKEND = reference_with("m-ctb-unpacked-tail-restarts", convert_text_batch=converting(_tail_restarts))
