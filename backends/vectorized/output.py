"""The output routes: ``convert_batch_output`` (THD lengths) and the batched route's dense
``block_causal`` mask, as whole-batch tensor work."""

from __future__ import annotations

import torch

from batchspec.backends.vectorized.rules import check_output_format
from batchspec.reference.contract import THD_LENGTH_PAD

__all__ = ["block_causal_mask", "check_output_format", "convert_batch_output", "thd_lengths_from_spans"]


def block_causal_mask(ids: torch.Tensor) -> torch.Tensor:
    """bool ``[B, 1, S, S]``: ``mask[b, 0, q, k]`` iff ``k <= q`` and ``ids[b, q] == ids[b, k]
    > 0`` [batched-block-causal], for ids in ``[0, S]`` (``convert_text_batch``'s ids).

    One broadcast comparison writes the mask (a query whose id is not positive compares
    against -1, which no key holds, so it attends to nothing), then one in-place ``tril_``
    keeps ``k <= q``: the mask is written twice and no other ``[B, S, S]`` tensor exists. The
    comparison reads the ids narrowed to int16 (int32 for rows of 32767 tokens or more), which
    hold every id in ``[0, S]``.
    """
    narrow = torch.int16 if ids.shape[-1] < 2**15 - 1 else torch.int32
    keys = ids.to(narrow)
    queries = torch.where(keys > 0, keys, -1)
    mask = queries[:, None, :, None] == keys[:, None, None, :]
    return mask.tril_()


def thd_lengths_from_spans(counts: torch.Tensor, spans: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``seq_lens`` and ``seq_lens_padded`` (int64 ``[B, width]``, ``THD_LENGTH_PAD`` after a
    row's spans) from ``monotone_row_spans``: span ``k`` of row ``b`` is id ``k + 1``, and the
    trailing zeros (``counts[:, 0]``) join the last span [thd-lengths]."""
    slot = torch.arange(1, width + 1, device=counts.device)
    lengths = counts[:, 1 : width + 1]
    seq_lens = torch.where(slot <= spans[:, None], lengths, THD_LENGTH_PAD)
    seq_lens_padded = seq_lens + torch.where(slot == spans[:, None], counts[:, :1], 0)
    return seq_lens, seq_lens_padded


def convert_batch_output(batch: dict, output_format: str) -> dict:
    """``batchspec.reference.output.convert_batch_output``, vectorized (SPEC.md section 7,
    "Output formats": outputs, dtypes, errors and clauses are there).

    The THD route finds every row's runs with whole-batch comparisons and one ``cumsum``
    (``thd_lengths_from_spans``); the device is read once, for the error flags and the width.
    """
    check_output_format(output_format)
    if output_format == "batched":
        return batch
    ids = batch["attention_document_ids"]
    batch_size, sequence = ids.shape
    positive = ids > 0
    zero = ids == 0
    starts = positive.clone()
    starts[:, 1:] &= ids[:, 1:] != ids[:, :-1]
    runs = starts.sum(dim=1)
    # Distinct positive ids per row: run starts of the row sorted by value.
    ordered = ids.sort(dim=1).values
    firsts = ordered > 0
    firsts[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]
    faults = torch.stack(
        [
            (ids < 0).any(dim=1),  # 1. a negative id
            ~positive.any(dim=1),  # 2. no positive id
            (positive & (zero.cumsum(dim=1) > 0)).any(dim=1),  # 3. a positive id after a zero
            runs > firsts.sum(dim=1),  # 4. an id that reappears after another id
        ]
    )  # [4, B]
    run_index = starts.cumsum(dim=1) - 1  # the span each positive token belongs to
    lengths = torch.zeros(batch_size, sequence + 1, dtype=torch.int64, device=ids.device)
    lengths.scatter_add_(1, torch.where(positive, run_index, sequence), positive.to(torch.int64))
    values = torch.cat([faults.flatten().to(torch.int64), runs.max()[None]]).tolist()
    flags, width = values[:-1], values[-1]
    messages = (
        "has a negative attention id",
        "has no token with a positive attention id",
        "has a positive attention id after an excluded token (padding must be a trailing suffix)",
        "has an attention id that reappears after another id (ids must form contiguous runs)",
    )
    if any(flags):
        kind, row = divmod(flags.index(1), batch_size)
        raise ValueError(f"convert_batch_output(output_format='thd'): row {row} {messages[kind]}")

    counts = torch.cat([zero.sum(dim=1, keepdim=True), lengths[:, :sequence]], dim=1)
    seq_lens, seq_lens_padded = thd_lengths_from_spans(counts, runs, width)
    batch["seq_lens"] = seq_lens
    batch["seq_lens_padded"] = seq_lens_padded
    batch["qkv_format"] = "thd"
    return batch
