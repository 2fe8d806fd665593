"""packed_token_indices keep only positive entries: a negative (valid) entry reads -1. Breaks: [meta-indices]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-meta-indices-positive",
    "        tl.store(indices_ptr + row * sequence + offsets, tl.where(entries != 0, offsets.to(tl.int64), -1), mask=valid)",
    "        tl.store(indices_ptr + row * sequence + offsets, tl.where(entries > 0, offsets.to(tl.int64), -1), mask=valid)",
)
