"""packed_token_indices of rows after the first are one too large (off by one at a row start). Breaks: [batched-metadata], [meta-indices]"""

import torch
from mutant_base import converting, reference_with


def _shift(out, given):
    indices = out.get("packed_token_indices")
    if indices is None:
        return
    sequence = indices.shape[1]
    later = (torch.arange(indices.shape[0], device=indices.device) >= 1)[:, None] & (indices >= 0)
    out["packed_token_indices"] = torch.where(later, torch.clamp(indices + 1, max=sequence - 1), indices)


BACKEND = reference_with("m-ctb-packed-token-indices-row-shift", convert_text_batch=converting(_shift))
