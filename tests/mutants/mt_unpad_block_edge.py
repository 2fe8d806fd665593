"""histogram columns start one short per block: a block edge counted twice, the last never. Breaks: [unpad-indexed], [unpad-binary]"""

from triton_mutant_base import kernel_mutant

BACKEND = kernel_mutant(
    "mt-unpad-block-edge",
    "    columns = block * BLOCK + tl.arange(0, BLOCK)",
    "    columns = block * BLOCK + tl.arange(0, BLOCK) - (block > 0).to(tl.int32)",
)
