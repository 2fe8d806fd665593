"""beside tensor token fields, positions are read as tensors: list or numpy positions raise. Breaks: [tb-device], [ctb-input-errors]"""

import torch
from mutant_base import converting, reference_with, token_field


def _read_positions_as_tensors(call):
    for record in getattr(call["sample_batch"], "records", None) or []:
        payload = getattr(record, "payload", None)
        if not isinstance(payload, dict) or not any(name in payload for name in ("input_ids", "tokens", "token_ids")):
            continue
        positions, tokens = payload.get("positions"), payload[token_field(record)]
        integer = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
        valid = isinstance(tokens, torch.Tensor) and tokens.dim() == 1 and tokens.dtype in integer
        if valid and positions is not None:  # (the token field was validated first)
            if not isinstance(positions, torch.Tensor):
                positions.long()  # AttributeError for a list or a numpy array


BACKEND = reference_with(
    "m-ctb-positions-need-tensor", convert_text_batch=converting(before=_read_positions_as_tensors)
)
