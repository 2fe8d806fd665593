"""packed_token_indices are batch-flattened (b * S + i), not row-local. Breaks: [batched-metadata], [meta-indices]"""

import torch
from mutant_base import converting, reference_with


def _flat_indices(out, given):
    indices = out.get("packed_token_indices")
    if indices is not None:
        batch_size, sequence_length = indices.shape
        offset = torch.arange(batch_size, device=indices.device)[:, None] * sequence_length
        out["packed_token_indices"] = torch.where(indices >= 0, indices + offset, indices)


BACKEND = reference_with("m-ctb-packed-token-indices-flat", convert_text_batch=converting(_flat_indices))
