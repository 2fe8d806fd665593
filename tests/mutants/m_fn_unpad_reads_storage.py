"""get_unpad_data reads the mask's storage row-major from offset 0, as a kernel given only data_ptr(). Breaks: [tb-layout]

Right for a contiguous mask at storage offset 0; a transposed, strided, expanded or offset mask
gives another mask's outputs (or a RuntimeError when its storage is too small).
"""

import torch
from mutant_base import reference, reference_with


def _as_if_contiguous(mask: torch.Tensor) -> torch.Tensor:
    """The mask's storage read with row-major strides from storage offset 0 (what ``data_ptr()``
    of the storage, walked as ``[batch, sequence]``, holds); as_strided raises when the storage
    is too small (an expanded mask)."""
    strides, running = [], 1
    for size in reversed(mask.shape):
        strides.append(running)
        running *= max(size, 1)
    return torch.as_strided(mask, mask.shape, tuple(reversed(strides)), 0)


def get_unpad_data(attention_mask):
    if isinstance(attention_mask, torch.Tensor) and attention_mask.ndim == 2:
        attention_mask = _as_if_contiguous(attention_mask)
    return reference.get_unpad_data(attention_mask)


BACKEND = reference_with("m-fn-unpad-reads-storage", get_unpad_data=get_unpad_data)
