"""``Datum`` and ``collate_datums``: the single-example training input and its batching.

Mirrors upstream ``nemo_automodel/components/datasets/datum.py`` (nemo-automodel 0.7.0, the
``datasets.datum`` page, docs/sources.md#seed-003), SPEC.md section 8. A ``Datum`` holds one
sequence, ``input_ids`` ``[T]``, and the loss
inputs aligned to it (``target_tokens``, ``weights``, ``logprobs``, ``advantages``, ...).
``collate_datums`` delegates the token fields to the canonical collaters
(``batchspec.reference.collaters``) and batches the float side inputs itself. Outputs, dtypes, error
types and messages are upstream's; the deliberate difference is decision D-6: nothing the
caller passes in is modified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from batchspec.reference.collaters import default_collater, pack_features_for_thd, packed_sequence_thd_collater
from batchspec.reference.contract import CROSS_ENTROPY_IGNORE_IDX

__all__ = ["CROSS_ENTROPY_IGNORE_IDX", "Datum", "collate_datums"]


@dataclass
class Datum:
    """One training example [datum-construct, datum-errors, tb-layout].

    Attributes:
        input_ids: 1-D tensor ``[T]`` of token ids. A non-tensor becomes
            ``torch.as_tensor(input_ids, dtype=torch.int64)``; a tensor is kept as given
            (its dtype is not coerced). ``T = 0`` is allowed.
        loss_fn_inputs: ``{key: tensor}``; per-token entries have ``T`` elements,
            per-sample entries one. Well-known keys: ``target_tokens`` (becomes ``labels``),
            ``weights`` (0 disables a position), ``logprobs``, ``advantages``. Each
            ``Datum`` holds its own dict: a copy of the one passed in, where every
            non-tensor value became ``torch.as_tensor(value)`` (ints int64, floats float32).
            The caller's dict is left as it was (D-6; upstream converts inside it).

    Raises:
        ValueError: ``input_ids`` is not 1-D:
            ``"Datum.input_ids must be 1-D [T]; got shape (...)"``.
    """

    input_ids: torch.Tensor
    loss_fn_inputs: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # input_ids: lists (and arrays) become int64; a tensor keeps its dtype.
        if not isinstance(self.input_ids, torch.Tensor):
            self.input_ids = torch.as_tensor(self.input_ids, dtype=torch.long)
        if self.input_ids.dim() != 1:
            raise ValueError(f"Datum.input_ids must be 1-D [T]; got shape {tuple(self.input_ids.shape)}")

        # loss_fn_inputs: our own dict, same key order, every value a tensor.
        self.loss_fn_inputs = {
            key: value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
            for key, value in self.loss_fn_inputs.items()
        }

    @property
    def seq_len(self) -> int:
        """``T``, the number of tokens."""
        return int(self.input_ids.shape[0])

    def to_features(self, *, ignore_index: int = CROSS_ENTROPY_IGNORE_IDX) -> dict[str, list]:
        """The per-example dict the canonical collaters take [datum-to-features, tb-layout].

        Args:
            ignore_index: keyword-only; the label written where ``weights == 0``.

        Returns:
            A new dict of plain Python lists: ``input_ids`` (``input_ids.tolist()``),
            ``attention_mask`` (``[1] * T``: every position of a ``Datum`` is a real token)
            and, only when ``target_tokens`` is present, ``labels``: ``target_tokens`` with
            ``ignore_index`` wherever ``weights == 0``. The mask broadcasts, so a scalar
            ``weights = 0`` masks every label.

        Raises:
            RuntimeError: ``weights`` does not broadcast against ``target_tokens``.

        The datum is not modified.
        """
        features: dict[str, list] = {
            "input_ids": self.input_ids.tolist(),
            "attention_mask": [1] * self.seq_len,
        }
        if "target_tokens" in self.loss_fn_inputs:
            labels = self.loss_fn_inputs["target_tokens"]
            weights = self.loss_fn_inputs.get("weights")
            if weights is not None:
                # out of place: a new tensor, target_tokens stays as it was
                labels = labels.masked_fill(weights == 0, ignore_index)
            features["labels"] = labels.tolist()
        return features


def _check_same_keys(datums: Sequence[Datum]) -> set[str]:
    """The ``loss_fn_inputs`` key set shared by every datum [collate-errors] (3).

    Raises:
        ValueError: a datum's key set differs from datum 0's (a missing ``weights`` would
            otherwise silently drop the loss mask).
    """
    keys = set(datums[0].loss_fn_inputs)
    for datum in datums[1:]:
        if set(datum.loss_fn_inputs) != keys:
            raise ValueError(
                "every Datum in a batch must carry the same loss_fn_inputs keys "
                f"(got {sorted(keys)} and {sorted(datum.loss_fn_inputs)}); a missing key would "
                "silently drop it -- for `weights` that means losing the loss mask"
            )
    return keys


def _batch_side_input(rows: list[torch.Tensor], lengths: list[int], packed: bool, width: int) -> torch.Tensor:
    """One side input of every datum as a batch tensor [collate-side-inputs].

    Args:
        rows: per datum, the value as a flat float32 tensor.
        lengths: per datum, its ``seq_len``.
        packed: the collation mode.
        width: padded mode's ``W`` (the collated ``input_ids`` width).

    Returns:
        Per-token (every row has exactly its datum's length): float32 ``[B, W]`` right-padded
        with 0.0 (padded), or ``[1, sum(T)]`` concatenated in datum order (packed).
        Otherwise per-sample: each row's first element, float32 ``[num_datums]`` (A7: also
        when a per-token row has the wrong length).

    Raises:
        IndexError: a per-sample row is empty.
    """
    per_token = all(row.shape[0] == length for row, length in zip(rows, lengths))
    if per_token and packed:
        return torch.cat(rows).unsqueeze(0)
    if per_token:
        # on the row's device, as upstream's F.pad keeps it [tb-device]
        zeros = [torch.zeros(width - row.shape[0], dtype=row.dtype, device=row.device) for row in rows]
        return torch.stack([torch.cat([row, pad]) for row, pad in zip(rows, zeros)])
    return torch.stack([row[0] for row in rows])


def collate_datums(
    datums: Sequence[Datum],
    *,
    packed: bool = False,
    pad_seq_len_divisible: int | None = None,
    ignore_index: int = CROSS_ENTROPY_IGNORE_IDX,
) -> dict[str, Any]:
    """Collate datums into one model-ready batch [collate-keyword-only, collate-padded,
    collate-padding-by-position, collate-packed, collate-weights, collate-side-inputs,
    collate-errors, collate-empty-datum-padded, collate-divisible-zero, collate-no-mutation, tb-layout].

    Args:
        datums: ``B >= 1`` datums, one sequence each (lengths ``T_i``).
        packed: keyword-only. False: padded ``[B, W]`` rows; True: one THD row ``[1, sum(T_i)]``.
        pad_seq_len_divisible: keyword-only; padded mode rounds ``W`` up to a multiple of it, of
            its absolute value when negative; ``0``, like ``None``, does not round
            [collate-divisible-zero] (ignored when packed).
        ignore_index: keyword-only; the label where ``weights == 0``, and of every position
            of a datum without ``target_tokens`` in packed mode. Padded mode's padding labels
            are -100 whatever it is (A6).

    Returns:
        Padded: ``input_ids`` int64 ``[B, W]`` (pad 0), ``attention_mask`` int64 ``[B, W]``,
        ``labels`` int64 ``[B, W]`` (only with ``target_tokens``; pad -100), ``padding_mask``
        bool ``[B, W]`` (``attention_mask == 0``), with ``W = max(T_i)`` rounded up.
        Packed: ``input_ids``, ``labels``, ``position_ids`` int64 ``[1, sum(T_i)]``,
        ``seq_lens`` and ``seq_lens_padded`` int64 ``[1, B]``, ``qkv_format = "thd"``.
        Then, both modes, every ``loss_fn_inputs`` key except ``target_tokens`` in sorted
        order, as float32: per-token ``[B, W]`` (0.0 padding) or ``[1, sum(T_i)]``,
        per-sample ``[B]`` (see ``_batch_side_input``).

    Raises:
        ValueError: ``"collate_datums requires at least one Datum"``; packed:
            ``"cannot pack an empty sequence"``, ``"labels length X does not match input_ids
            length Y"``; ``"every Datum in a batch must carry the same loss_fn_inputs keys
            ..."`` (checked after collation).
        KeyError: ``'labels'``, padded mode, datum 0 has ``target_tokens`` and a later one
            does not.
        RuntimeError: ``weights`` that do not broadcast against ``target_tokens``.

    The datums are never modified.
    """
    # (1) At least one datum.
    if len(datums) == 0:
        raise ValueError("collate_datums requires at least one Datum")

    # (2) Token fields through the canonical collaters (their errors propagate).
    features = [datum.to_features(ignore_index=ignore_index) for datum in datums]
    if packed:
        pack = pack_features_for_thd(features, ignore_index=ignore_index)
        batch = packed_sequence_thd_collater([pack])
    else:
        batch = default_collater(features, pad_seq_len_divisible)
    width = int(batch["input_ids"].shape[-1])

    # (3) Only now: every datum must carry the same loss_fn_inputs keys.
    keys = _check_same_keys(datums)

    # Side inputs, in sorted key order, as float32 (a key equal to an output key replaces
    # that value in place).
    lengths = [datum.seq_len for datum in datums]
    for key in sorted(keys - {"target_tokens"}):
        rows = [datum.loss_fn_inputs[key].to(torch.float32).flatten() for datum in datums]
        batch[key] = _batch_side_input(rows, lengths, packed, width)
    return batch
