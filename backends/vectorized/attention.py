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

from batchspec.backends.vectorized.rules import position_axes, xdoc_fields

__all__ = ["adapt_model_inputs", "enable_xdoc_attention", "xdoc_positions"]


def _dtype_name(value: Any) -> str:
    return str(getattr(value, "dtype", type(value).__name__))


def adapt_model_inputs(batch: dict, attention_eligibility: torch.Tensor | None = None) -> dict:
    """``batchspec.reference.attention.adapt_model_inputs``, vectorized (SPEC.md section 5,
    "``adapt_model_inputs``": shapes, dtypes, errors and clauses are there).

    One ``clone`` (no eligibility) or one ``masked_fill`` over the whole batch; the checks read
    only dtypes and shapes, so the device is never read.
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
    """``batchspec.reference.attention.enable_xdoc_attention``, vectorized (SPEC.md section 6,
    "``enable_xdoc_attention``": shapes, dtypes, errors and clauses are there).

    The shift is ``xdoc_positions`` (one ``scatter_reduce``, a ``cumsum`` and a ``gather``; see
    this module's docstring) over the ranks of ``torch.unique``'s ids; the device is read once,
    for the negative-position flag and, with an int ``max_sequence_length``, the largest
    translated position.
    """
    document_ids, attention_document_ids = xdoc_fields(batch)
    positions = position_axes(batch["position_ids"], document_ids)

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
    if bound is not None and len(values) > 1 and values[1] >= bound:
        raise xdoc_bound_error(values[1], bound)

    batch["attention_document_ids"] = (attention_document_ids > 0).to(torch.int64)
    batch["position_ids"] = shifted if batch["position_ids"].ndim == 3 else shifted[0]
    return batch
