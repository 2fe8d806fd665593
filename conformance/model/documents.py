"""The documents of a packed batch as the model must see each one alone (``documents``): from the
input records' tokens, positions and padding alone, never from the backend or the reference;
and their mRoPE layout (``mrope_positions``: an ``IMAGE_GRID`` block numbered as a Qwen2-VL
processor numbers an image)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from batchspec.conformance.helpers.sample_batches import Row, row_positions, rows_of, unpacked_row
from batchspec.conformance.model.data import ModelBatch

__all__ = ["IMAGE_AT", "IMAGE_GRID", "Document", "documents", "mrope_positions", "padded_rows"]


IMAGE_GRID = (1, 2, 3)
"""The (temporal, height, width) grid of the image block the mRoPE routes place in every document
of at least ``IMAGE_AT + 6`` tokens: its 6 tokens take 3-axis positions, as a Qwen2-VL processor
numbers an image (the token ids stay text; the model does not care)."""
IMAGE_AT = 2


@dataclass(frozen=True)
class Document:
    """One document of a row as the model must see it: the row's input tokens ``start .. stop``
    (``stop <= S``), and ``targets[k]`` the token input ``start + k`` must predict, or ``None``
    when its label must be ``ignore_index``. ``pieces``: its mRoPE layout (``mrope_positions``)."""

    row: int
    start: int
    stop: int
    tokens: tuple[int, ...]
    targets: tuple[int | None, ...]
    pieces: tuple[tuple[int, ...], ...] = ()

    @property
    def span(self) -> str:
        return f"tokens {self.start}..{self.stop - 1}"


def _pieces(length: int) -> tuple[tuple[int, ...], ...]:
    """A document's mRoPE layout: text, one ``IMAGE_GRID`` block at ``IMAGE_AT`` when it fits,
    text; ``(n,)`` is n text tokens, ``(t, h, w)`` an image block."""
    grid = math.prod(IMAGE_GRID)
    if length < IMAGE_AT + grid:
        return ((length,),)
    rest = length - IMAGE_AT - grid
    return ((IMAGE_AT,), IMAGE_GRID, *(((rest,),) if rest else ()))


def mrope_positions(pieces: Sequence[tuple[int, ...]]) -> torch.Tensor:
    """3-axis positions int64 ``[3, tokens]`` of a sequence laid out as ``pieces``, numbered as a
    Qwen2-VL processor numbers one sequence: text tokens take the same position on every axis,
    one more than the largest position so far; an image block ``(t, h, w)`` takes, from the
    next start ``p``, ``(p + ti, p + hi, p + wi)`` over its grid in ``t, h, w`` order."""
    columns, next_start = [], 0
    for piece in pieces:
        if len(piece) == 1:
            steps = torch.arange(piece[0]) + next_start
            columns.append(steps.expand(3, -1))
        else:
            t, h, w = piece
            ti, hi, wi = torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij")
            columns.append(torch.stack([ti.flatten(), hi.flatten(), wi.flatten()]) + next_start)
        if columns[-1].numel():
            next_start = int(columns[-1].max()) + 1
    return torch.cat(columns, dim=1) if columns else torch.zeros(3, 0, dtype=torch.int64)


def padded_rows(model_batch: ModelBatch) -> list[Row]:
    """The batch's unshifted rows, after the unpacked route's padding when it has one (the
    appended pads join the padding [unpacked-padding])."""
    rows = rows_of(model_batch.sample_batch)
    if model_batch.pad_to_length is None:
        return rows
    if model_batch.pad_token_id is None:
        raise ValueError(f"an unpacked route's batch needs pad_token_id with pad_to_length={model_batch.pad_to_length}")
    return [unpacked_row(row, model_batch.pad_to_length, model_batch.pad_token_id) for row in rows]


def documents(rows: Sequence[Row], *, xdoc: bool, mask_segment_starts: bool) -> list[Document]:
    """The documents of ``rows`` (unshifted, after any padding), from their tokens, positions
    and padding alone: each subdocument (a run from a position-0 token, [ctb-boundaries-from-zeros])
    of the real tokens, or under ``xdoc`` each row's real tokens as one. Targets are the next
    unshifted tokens while they are real, ``None`` at padding and, with ``mask_segment_starts``,
    at a target that starts a subdocument.

    Raises:
        ValueError: a subdocument's positions are not ``0, 1, ...`` (the check compares with a
            document run at those positions; the corpus always has them).
    """
    out = []
    for b, row in enumerate(rows):
        positions = row_positions(row)
        length, real = len(row.tokens), len(row.tokens) - (row.padding_length or 0)
        sequence = length - 1
        starts = [i for i in range(real) if positions[i] == 0]
        bounds = [(0, real)] if xdoc else list(zip(starts, [*starts[1:], real]))
        for start, end in bounds:
            if not xdoc and list(positions[start:end]) != list(range(end - start)):
                raise ValueError(f"row {b}: the subdocument at {start} has positions {positions[start:end]}")
            stop = min(end, sequence)
            if stop <= start:
                continue  # a one-token document that ends the row is only a target
            targets = []
            for i in range(start, stop):
                target_real = i + 1 < real
                masked_start = mask_segment_starts and target_real and positions[i + 1] == 0
                targets.append(row.tokens[i + 1] if target_real and not masked_start else None)
            # its mRoPE layout: its own, or under xdoc the row's subdocuments' one after another
            parts = zip(starts, [*starts[1:], real]) if xdoc else [(start, end)]
            pieces = tuple(p for s, e in parts for p in _pieces(e - s))
            out.append(Document(b, start, stop, tuple(row.tokens[start:stop]), tuple(targets), pieces))
    return out
