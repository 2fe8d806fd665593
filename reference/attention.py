"""Attention membership: ``adapt_model_inputs`` and ``enable_xdoc_attention``.

Mirrors upstream ``nemo_automodel/components/datasets/zephon/attention.py`` (the
``zephon.attention`` page, docs/sources.md#seed-001): a stateless mapping from Zephon's
collated tensors to AutoModel's packed input contract.
"""

from __future__ import annotations

from typing import Any

import torch

from batchspec.reference.contract import PackedSequenceContract, TrainingBatch

__all__ = ["adapt_model_inputs", "enable_xdoc_attention"]


def adapt_model_inputs(batch: TrainingBatch, attention_eligibility: torch.Tensor | None = None) -> TrainingBatch:
    """Add ``attention_document_ids`` to a converted batch [adapt-attention-ids,
    adapt-no-mutation, adapt-errors, tb-device, tb-layout, tb-no-aliasing].

    Args:
        batch: mapping holding int64 ``document_ids`` ``[batch, sequence]`` (1-based
            row-local subdocument ids, 0 at padding).
        attention_eligibility: optional bool ``[batch, sequence]``; ``False`` excludes a
            token (e.g. a synthetic image token) from attention independently of padding.

    Returns:
        The same mapping, with a new int64 ``attention_document_ids`` ``[batch, sequence]``
        equal to ``document_ids`` where eligible and 0 elsewhere. No id is renumbered and no
        existing tensor is modified in place.

    Raises:
        ValueError: ``document_ids`` is missing or not 2-D; the eligibility shape differs
            from ``document_ids``'s.
        TypeError: ``document_ids`` is not an int64 tensor; the eligibility is not a bool
            tensor.
    """
    document_ids: Any = batch.get("document_ids")
    if document_ids is None:
        raise ValueError("adapt_model_inputs: batch has no 'document_ids' [batch, sequence] entry")
    if not isinstance(document_ids, torch.Tensor) or document_ids.dtype != torch.int64:
        raise TypeError(
            "adapt_model_inputs: document_ids must be an int64 tensor, got "
            f"{getattr(document_ids, 'dtype', type(document_ids).__name__)}"
        )
    if document_ids.ndim != 2:
        raise ValueError(
            f"adapt_model_inputs: document_ids must have shape [batch, sequence], got {tuple(document_ids.shape)}"
        )

    attention_document_ids = document_ids.clone()
    if attention_eligibility is not None:
        if not isinstance(attention_eligibility, torch.Tensor) or attention_eligibility.dtype != torch.bool:
            raise TypeError(
                "adapt_model_inputs: attention_eligibility must be a bool tensor, got "
                f"{getattr(attention_eligibility, 'dtype', type(attention_eligibility).__name__)}"
            )
        if attention_eligibility.shape != document_ids.shape:
            raise ValueError(
                "adapt_model_inputs: attention_eligibility must have shape "
                f"{tuple(document_ids.shape)} like document_ids, got {tuple(attention_eligibility.shape)}"
            )
        batch_size, sequence_length = document_ids.shape
        for b in range(batch_size):
            for i in range(sequence_length):
                if not bool(attention_eligibility[b, i]):
                    attention_document_ids[b, i] = 0

    batch["attention_document_ids"] = attention_document_ids
    return batch


def _xdoc_ids(batch: TrainingBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """``document_ids`` and ``attention_document_ids``, checked [xdoc-errors]: the three
    fields are present, the two ids int64 tensors of one ``[batch, sequence]`` shape."""
    for name in ("document_ids", "attention_document_ids", "position_ids"):
        if name not in batch:
            raise ValueError(f"enable_xdoc_attention: batch has no {name!r} entry (run adapt_model_inputs first)")
    document_ids = batch["document_ids"]
    attention_document_ids = batch["attention_document_ids"]
    for name, tensor in (("document_ids", document_ids), ("attention_document_ids", attention_document_ids)):
        if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.int64:
            raise TypeError(
                f"enable_xdoc_attention: {name} must be an int64 tensor, got "
                f"{getattr(tensor, 'dtype', type(tensor).__name__)}"
            )
    if document_ids.ndim != 2 or attention_document_ids.shape != document_ids.shape:
        raise ValueError(
            "enable_xdoc_attention: document_ids and attention_document_ids must share one shape "
            f"[batch, sequence], got {tuple(document_ids.shape)} and {tuple(attention_document_ids.shape)}"
        )
    return document_ids, attention_document_ids


def _position_axes(position_ids: torch.Tensor, document_ids: torch.Tensor) -> torch.Tensor:
    """``position_ids`` as ``[axes, batch, sequence]`` (text has one axis) [xdoc-errors]."""
    if not isinstance(position_ids, torch.Tensor) or position_ids.dtype != torch.int64:
        raise TypeError(
            "enable_xdoc_attention: position_ids must be an int64 tensor, got "
            f"{getattr(position_ids, 'dtype', type(position_ids).__name__)}"
        )
    if position_ids.ndim == 2 and position_ids.shape == document_ids.shape:
        return position_ids[None]
    if position_ids.ndim == 3 and position_ids.shape[1:] == document_ids.shape and position_ids.shape[0] >= 1:
        return position_ids
    raise ValueError(
        "enable_xdoc_attention: position_ids must have shape [batch, sequence] "
        f"{tuple(document_ids.shape)} or [axes, batch, sequence] (axes, *{tuple(document_ids.shape)}), "
        f"got {tuple(position_ids.shape)}"
    )


def enable_xdoc_attention(batch: TrainingBatch, packing_contract: PackedSequenceContract) -> TrainingBatch:
    """Join each row's subdocuments for attention and number them continuously
    [xdoc-attention-ids, xdoc-positions, xdoc-untouched, xdoc-contract, xdoc-errors,
    contract-no-revalidation, tb-device, tb-layout, tb-no-aliasing].

    Args:
        batch: mapping from ``adapt_model_inputs``: int64 ``document_ids`` and
            ``attention_document_ids`` ``[batch, sequence]`` (0 = padding or excluded), and
            int64 ``position_ids`` ``[batch, sequence]`` or ``[axes, batch, sequence]``
            (mRoPE) holding non-negative coordinates local to each subdocument.
        packing_contract: the model's contract. Only ``max_sequence_length`` is read: when it
            is an int, every translated position (a token with ``document_ids > 0``) must be
            below it; positions of tokens with ``document_ids == 0`` (padding) are not
            checked. The mask type and metadata request do not change this step.

    Returns:
        The same mapping with new tensors:
        ``attention_document_ids``: 1 wherever it was positive, 0 elsewhere (one attention
        document per row);
        ``position_ids``: per row, subdocument 1 keeps its coordinates and every later
        subdocument ``k`` (in ``document_ids`` order) is shifted by one more than the largest
        translated coordinate of subdocument ``k - 1`` over all axes, the same shift on every
        axis. Tokens with ``document_ids == 0`` keep their positions. ``document_ids``,
        ``input_ids``, ``labels`` and ``padding_mask`` are untouched.

    Raises:
        ValueError: ``document_ids``/``attention_document_ids``/``position_ids`` missing; a
            shape that is not ``[batch, sequence]`` (or ``[axes, batch, sequence]`` for
            positions) of the same size; a negative position; a translated position (of a
            token with ``document_ids > 0``) ``>= max_sequence_length``.
        TypeError: one of the three is not an int64 tensor.
    """
    document_ids, attention_document_ids = _xdoc_ids(batch)
    old_positions = _position_axes(batch["position_ids"], document_ids)
    if bool((old_positions < 0).any()):
        raise ValueError("enable_xdoc_attention: position_ids must be >= 0 (subdocument-local coordinates)")

    positions = old_positions.clone()
    axes, batch_size, sequence_length = positions.shape
    for b in range(batch_size):
        offset = 0
        for document in range(1, int(document_ids[b].max()) + 1):
            tokens = [i for i in range(sequence_length) if int(document_ids[b, i]) == document]
            if not tokens:
                continue
            # Shift every axis of this subdocument by the same offset.
            for i in tokens:
                for a in range(axes):
                    positions[a, b, i] = old_positions[a, b, i] + offset
            # The next subdocument starts one past this one's largest coordinate.
            offset = max(int(positions[a, b, i]) for i in tokens for a in range(axes)) + 1

    # [xdoc-contract] The bound applies to translated positions only: tokens with
    # document_ids > 0. Padding (and any token with id 0) keeps its positions unchecked.
    max_sequence_length = getattr(packing_contract, "max_sequence_length", None)
    if isinstance(max_sequence_length, int) and not isinstance(max_sequence_length, bool):
        translated = positions[:, document_ids > 0]  # [axes, translated tokens]
        largest = int(translated.max()) if translated.numel() else -1
        if largest >= max_sequence_length:
            raise ValueError(
                f"enable_xdoc_attention: translated position_ids reach {largest}, but "
                f"packing_contract.max_sequence_length is {max_sequence_length}"
            )

    joined = torch.zeros_like(attention_document_ids)
    joined[attention_document_ids > 0] = 1
    batch["attention_document_ids"] = joined
    batch["position_ids"] = positions if batch["position_ids"].ndim == 3 else positions[0].clone()
    return batch
