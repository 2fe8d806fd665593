"""The shared packed batch of SPEC.md's worked examples ("Worked example A (defaults)") and
Example A's expected output, written by hand; used by several conformance modules."""

from __future__ import annotations

import torch

from conformance._zephon import Contract, Row, sample_batch

__all__ = [
    "EXAMPLE_A",
    "EXAMPLE_IDS",
    "EXAMPLE_ROWS",
    "F",
    "T",
    "bools",
    "convert",
    "f32",
    "int32",
    "long",
    "block_mask",
]

F, T = False, True

# The shared packed batch of SPEC.md's worked examples: B = 2, L = 9, S = 8, pad id 0.
EXAMPLE_ROWS = [
    Row(tokens=(11, 12, 13, 21, 22, 31, 32, 0, 0), positions=(0, 1, 2, 0, 1, 0, 1, 0, 1), padding_length=2),
    Row(tokens=(41, 42, 43, 44, 45, 51, 52, 53, 0), positions=(0, 1, 2, 3, 4, 0, 1, 2, 0), padding_length=1),
]
EXAMPLE_IDS = [[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]]

# Example A's block-causal mask, written per query row: "1" = the query may attend to that key.
EXAMPLE_A_MASK = (
    "1....... 11...... 111..... ...1.... ...11... .....1.. .....11. ........",
    "1....... 11...... 111..... 1111.... 11111... .....1.. .....11. .....111",
)


def long(values) -> torch.Tensor:
    """An int64 tensor literal."""
    return torch.tensor(values, dtype=torch.int64)


def int32(values) -> torch.Tensor:
    """An int32 tensor literal."""
    return torch.tensor(values, dtype=torch.int32)


def f32(values) -> torch.Tensor:
    """A float32 tensor literal."""
    return torch.tensor(values, dtype=torch.float32)


def bools(values) -> torch.Tensor:
    """A bool tensor literal."""
    return torch.tensor(values, dtype=torch.bool)


def block_mask(*rows: str) -> torch.Tensor:
    """bool ``[B, 1, S, S]`` from one string per batch row, written one query row per word:
    ``block_mask("1.. 11. ...")`` is a row whose third query attends to nothing."""
    return torch.tensor([[[[c == "1" for c in q] for q in row.split()]] for row in rows], dtype=torch.bool)


DEFAULT_CONTRACT = Contract()  # frozen: one shared default is safe


def convert(
    backend,
    rows,
    contract=DEFAULT_CONTRACT,
    *,
    ignore_index=-100,
    mask_segment_starts=False,
    xdoc=False,
    output_format="batched",
    pad_to_length=None,
    pad_token_id=None,
):
    """``backend.convert_text_batch`` on ``rows``, every argument passed positionally."""
    return backend.convert_text_batch(
        sample_batch(rows),
        contract,
        ignore_index,
        mask_segment_starts,
        xdoc,
        output_format,
        pad_to_length,
        pad_token_id,
    )


EXAMPLE_A = {
    "input_ids": long([[11, 12, 13, 21, 22, 31, 32, 0], [41, 42, 43, 44, 45, 51, 52, 53]]),
    "labels": long([[12, 13, 21, 22, 31, 32, -100, -100], [42, 43, 44, 45, 51, 52, 53, -100]]),
    "position_ids": long([[0, 1, 2, 0, 1, 0, 1, 0], [0, 1, 2, 3, 4, 0, 1, 2]]),
    "padding_mask": torch.tensor([[F, F, F, F, F, F, F, T], [F] * 8], dtype=torch.bool),
    "document_ids": long(EXAMPLE_IDS),
    "attention_document_ids": long(EXAMPLE_IDS),
    "_packed_seq_ids": long(EXAMPLE_IDS),
    "attention_mask": block_mask(*EXAMPLE_A_MASK),
}
