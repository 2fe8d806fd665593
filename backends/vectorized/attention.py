"""``adapt_model_inputs`` and ``enable_xdoc_attention`` as whole-batch tensor work.

The cross-document position shift needs, per row, every subdocument's largest coordinate and
the running sum of those maxima in id order. Both come from one ``scatter_reduce`` into a
``[B, ids]`` table (``ids`` the number of distinct ids, at most ``S + 1``), an exclusive
``cumsum`` along it and one ``gather`` back: never a ``[documents, S]`` temporary and no loop
over documents.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["adapt_model_inputs", "enable_xdoc_attention", "xdoc_positions"]


def _dtype_name(value: Any) -> str:
    return str(getattr(value, "dtype", type(value).__name__))


def adapt_model_inputs(batch: dict, attention_eligibility: torch.Tensor | None = None) -> dict:
    """Add ``attention_document_ids`` [adapt-attention-ids, adapt-no-mutation, adapt-errors,
    tb-device, tb-no-aliasing].

    Args:
        batch: mapping with int64 ``document_ids`` ``[batch, sequence]``.
        attention_eligibility: optional bool ``[batch, sequence]``; False excludes a token.

    Returns:
        The same mapping with a new int64 ``attention_document_ids`` ``[batch, sequence]``:
        ``document_ids`` where eligible, 0 elsewhere.

    Raises:
        ValueError: ``document_ids`` missing or not 2-D; ``attention_eligibility`` of another
            shape (both shapes named).
        TypeError: ``document_ids`` not an int64 tensor; ``attention_eligibility`` not a bool
            tensor.
    """
    document_ids = batch.get("document_ids")
    if document_ids is None:
        raise ValueError("adapt_model_inputs needs batch['document_ids'] ([batch, sequence]); the key is missing")
    if not isinstance(document_ids, torch.Tensor) or document_ids.dtype != torch.int64:
        raise TypeError(f"document_ids: expected an int64 tensor, got {_dtype_name(document_ids)}")
    if document_ids.ndim != 2:
        raise ValueError(f"document_ids: expected [batch, sequence], got shape {tuple(document_ids.shape)}")
    if attention_eligibility is None:
        batch["attention_document_ids"] = document_ids.clone()
        return batch
    if not isinstance(attention_eligibility, torch.Tensor) or attention_eligibility.dtype != torch.bool:
        raise TypeError(f"attention_eligibility: expected a bool tensor, got {_dtype_name(attention_eligibility)}")
    if attention_eligibility.shape != document_ids.shape:
        raise ValueError(
            f"attention_eligibility: shape {tuple(attention_eligibility.shape)} differs from document_ids shape "
            f"{tuple(document_ids.shape)}"
        )
    batch["attention_document_ids"] = document_ids.masked_fill(~attention_eligibility, 0)
    return batch


def xdoc_positions(positions: torch.Tensor, ranks: torch.Tensor, translated: torch.Tensor, width: int) -> torch.Tensor:
    """Positions shifted so each row is numbered continuously across its subdocuments
    [xdoc-positions].

    Args:
        positions: int64 ``[axes, B, S]``, non-negative.
        ranks: int64 ``[B, S]`` in ``[0, width)``: the subdocument's rank in id order for a
            translated token, anything for the others.
        translated: bool ``[B, S]``: the token belongs to a subdocument (``document_ids > 0``).
        width: an upper bound on the ranks plus one.

    Returns:
        New int64 ``[axes, B, S]``: a translated token gets ``old + offset`` where the offset
        of rank ``r`` is the sum over the row's lower ranks of (their largest coordinate over
        all axes + 1); other tokens keep their positions.
    """
    batch = positions.shape[1]
    largest_over_axes = positions.amax(dim=0)  # [B, S]
    # Per (row, rank) the largest coordinate; -1 where the rank is absent (so it adds 0 below).
    spare = width  # untranslated tokens go to a spare column
    index = torch.where(translated, ranks, spare)
    table = torch.full((batch, width + 1), -1, dtype=torch.int64, device=positions.device)
    table.scatter_reduce_(1, index, largest_over_axes, reduce="amax", include_self=True)
    contribution = table[:, :width] + 1
    offsets = contribution.cumsum(dim=1) - contribution  # exclusive: lower ranks only
    shift = torch.where(translated, offsets.gather(1, torch.where(translated, ranks, 0)), 0)
    return positions + shift[None]


def _position_axes(position_ids: Any, document_ids: torch.Tensor) -> torch.Tensor:
    """``position_ids`` as ``[axes, B, S]`` [xdoc-errors] items 2 and 3."""
    if not isinstance(position_ids, torch.Tensor) or position_ids.dtype != torch.int64:
        raise TypeError(f"position_ids: expected an int64 tensor, got {_dtype_name(position_ids)}")
    if position_ids.ndim == 2 and position_ids.shape == document_ids.shape:
        return position_ids[None]
    if position_ids.ndim == 3 and position_ids.shape[1:] == document_ids.shape and position_ids.shape[0] >= 1:
        return position_ids
    raise ValueError(
        f"position_ids: expected [batch, sequence] {tuple(document_ids.shape)} or [axes, batch, sequence], "
        f"got shape {tuple(position_ids.shape)}"
    )


def _max_sequence_length(packing_contract: Any) -> int | None:
    value = getattr(packing_contract, "max_sequence_length", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def xdoc_bound_error(largest: int, max_sequence_length: int) -> ValueError:
    """[xdoc-contract]'s error: it names ``max_sequence_length``, its value and the position."""
    return ValueError(
        f"cross-document positions reach {largest}, not below max_sequence_length={max_sequence_length} "
        "of the packing contract"
    )


def enable_xdoc_attention(batch: dict, packing_contract: Any) -> dict:
    """Join each row's subdocuments for attention and number them continuously
    [xdoc-attention-ids, xdoc-positions, xdoc-untouched, xdoc-contract, xdoc-errors,
    contract-no-revalidation, tb-device, tb-no-aliasing].

    Args:
        batch: mapping with int64 ``document_ids`` and ``attention_document_ids``
            ``[batch, sequence]`` and int64 ``position_ids`` ``[batch, sequence]`` or
            ``[axes, batch, sequence]`` (mRoPE), non-negative.
        packing_contract: only ``max_sequence_length`` is read (an int bounds every translated
            position; anything else bounds nothing).

    Returns:
        The same mapping with new ``attention_document_ids`` (1 where positive, else 0) and
        ``position_ids`` (same shape as given; subdocument ``k`` in id order shifted by one
        more than the largest translated coordinate of the subdocument before it, over all
        axes; tokens with ``document_ids <= 0`` unchanged).

    Raises:
        ValueError: a missing field; a shape that does not fit (the field named); a negative
            position; a translated position ``>= max_sequence_length``.
        TypeError: a field that is not an int64 tensor.
    """
    for name in ("document_ids", "attention_document_ids", "position_ids"):
        if name not in batch:
            raise ValueError(f"enable_xdoc_attention needs batch[{name!r}]; the key is missing")
    document_ids = batch["document_ids"]
    attention_document_ids = batch["attention_document_ids"]
    for name, tensor in (("document_ids", document_ids), ("attention_document_ids", attention_document_ids)):
        if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.int64:
            raise TypeError(f"{name}: expected an int64 tensor, got {_dtype_name(tensor)}")
    if document_ids.ndim != 2:
        raise ValueError(f"document_ids: expected [batch, sequence], got shape {tuple(document_ids.shape)}")
    if attention_document_ids.shape != document_ids.shape:
        raise ValueError(
            f"attention_document_ids: shape {tuple(attention_document_ids.shape)} differs from document_ids "
            f"shape {tuple(document_ids.shape)}"
        )
    positions = _position_axes(batch["position_ids"], document_ids)

    translated = document_ids > 0
    bound = _max_sequence_length(packing_contract)
    # Ranks of the ids in value order (0 and negative ids rank below every positive id and are
    # never translated); the distinct ids are at most S + 1 per batch.
    distinct, ranks = torch.unique(document_ids, sorted=True, return_inverse=True)
    shifted = xdoc_positions(positions, ranks, translated, distinct.numel())
    reads = [(positions < 0).any().to(torch.int64)]
    if bound is not None and shifted.numel():
        reads.append(torch.where(translated[None], shifted, -1).max())
    values = torch.stack(reads).tolist()
    if values[0]:
        raise ValueError("position_ids: every position must be >= 0 (subdocument-local coordinates)")
    if len(values) > 1 and values[1] >= bound:
        raise xdoc_bound_error(values[1], bound)

    batch["attention_document_ids"] = (attention_document_ids > 0).to(torch.int64)
    batch["position_ids"] = shifted if batch["position_ids"].ndim == 3 else shifted[0]
    return batch
