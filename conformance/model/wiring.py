"""Feeding a ``TrainingBatch`` to a Hugging Face transformers 5.x model: the wirings SPEC.md's
non-normative section "Feeding a TrainingBatch to a model" describes, as code.

Each route reads only the keys its section names:

- batched ``block_causal`` (``attention_mask`` bool ``[batch, 1, sequence, sequence]``):
  ``sdpa`` takes the mask as given; ``eager`` adds its mask to the scores, so it needs the
  additive form of ``additive_mask`` (``0`` where attended, ``finfo(float32).min`` elsewhere:
  eager's softmax runs in float32, where ``finfo(float64).min`` is ``-inf``).
- the packed-metadata bundle (``packed_token_indices`` int64 ``[batch, sequence]``,
  ``cu_seqlens`` int32 ``[batch, max id + 1]``, ``max_seqlen`` int): ``metadata_varlen_inputs``
  turns it into the flat token index and the global ``cu_seqlens`` a varlen kernel takes;
  ``metadata_varlen_attention`` is such a kernel plugged into the model's attention interface.
- THD (``seq_lens``, ``seq_lens_padded`` int64 ``[batch, max spans]``, ``-1000`` fill):
  ``thd_varlen_inputs`` gives the TE-style ``cu_seqlens`` / ``cu_seqlens_padded`` over the
  flattened ``[batch * sequence]`` tokens; ``thd_varlen_attention`` reads only them.
- the loss: ``labels`` are already shifted, so the per-token loss is
  ``cross_entropy(logits[b, i], labels[b, i])`` (``token_losses``); a Hugging Face causal-LM loss
  takes them as ``shift_labels=``, never ``labels=`` (which shifts them once more).

The varlen attention is emulated here: each span attends causally to itself through
``scaled_dot_product_attention`` in the model's dtype, and a query past ``max_seqlen`` within
its span gets no output (as a kernel launched for ``max_seqlen`` computes none). On CUDA,
``KERNELS["torch_varlen"]`` runs torch's own ``torch.nn.attention.varlen.varlen_attn``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

__all__ = [
    "KERNELS",
    "METADATA_ATTENTION",
    "THD_ATTENTION",
    "additive_mask",
    "emulated_varlen",
    "metadata_varlen_attention",
    "metadata_varlen_inputs",
    "register_attention",
    "thd_varlen_attention",
    "thd_varlen_inputs",
    "token_losses",
    "torch_varlen",
]

METADATA_ATTENTION = "batchspec_metadata_varlen"
"""The attention implementation name that reads the packed-metadata bundle."""
THD_ATTENTION = "batchspec_thd_varlen"
"""The attention implementation name that reads the THD lengths."""


def additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive form of a bool ``attention_mask`` ``[batch, 1, sequence, sequence]`` for
    ``eager`` attention: ``0`` where ``mask`` is ``True`` and, elsewhere, the most negative value
    both ``dtype`` (the model's) and float32 hold (``finfo(float32).min`` for float64, the
    dtype's own for bfloat16 / float16): eager attention runs its softmax in float32, where
    ``finfo(float64).min`` becomes ``-inf`` and a query row with no ``True`` entry (padding)
    NaN."""
    fill = max(torch.finfo(torch.float32).min, torch.finfo(dtype).min)
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, fill)


def token_losses(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int) -> torch.Tensor:
    """Per-token cross entropy ``[batch, sequence]`` of ``logits`` ``[batch, sequence, vocab]``
    against the already-shifted ``labels`` int64 ``[batch, sequence]``; ``0`` where a label is
    ``ignore_index``."""
    return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=ignore_index, reduction="none")


def metadata_varlen_inputs(
    packed_token_indices: torch.Tensor, cu_seqlens: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """What a varlen kernel takes, from the packed-metadata bundle: ``(index, cu)``, ``index``
    int64 ``[tokens]`` the positions in the flattened ``[batch * sequence]`` tokens of every
    valid token (``packed_token_indices >= 0``, row-local, offset by ``b * sequence``), row by
    row; ``cu`` int32 ``[spans + 1]``, every row's ``cu_seqlens`` front (up to its ``-1`` fill)
    shifted by the tokens of the rows before it, joined.

    Raises:
        ValueError: an index is not row-local (``>= sequence``), or the spans do not count the
            valid tokens (a kernel would read past them).
    """
    batch, sequence = packed_token_indices.shape
    valid = packed_token_indices >= 0
    if bool((packed_token_indices[valid] >= sequence).any()):
        raise ValueError(f"packed_token_indices: a row-local index >= the sequence length {sequence}")
    offsets = torch.arange(batch, device=valid.device)[:, None] * sequence
    index = (packed_token_indices + offsets)[valid]
    pieces, total = [torch.zeros(1, dtype=torch.int32, device=cu_seqlens.device)], 0
    for b in range(batch):
        row = cu_seqlens[b]
        row = row[: int((row >= 0).sum())]
        pieces.append(row[1:] + total)
        total += int(row[-1]) if row.numel() else 0
    cu = torch.cat(pieces).to(torch.int32)
    if int(cu[-1]) != index.numel() or bool((cu[1:] < cu[:-1]).any()):
        raise ValueError(
            f"cu_seqlens: spans of {int(cu[-1])} tokens in all, but packed_token_indices has {index.numel()} valid tokens"
        )
    return index, cu


def thd_varlen_inputs(
    seq_lens: torch.Tensor, seq_lens_padded: torch.Tensor, sequence: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """What a TE-style THD kernel takes: ``(cu, cu_padded)``, int32 ``[spans + 1]``, the
    cumulative valid ``seq_lens`` and ``seq_lens_padded`` entries (``-1000`` fill dropped) of
    every row in order. Span ``j`` holds the flattened tokens
    ``cu_padded[j] .. cu_padded[j] + (cu[j + 1] - cu[j])``; the rest up to ``cu_padded[j + 1]``
    is padding.

    Raises:
        ValueError: a length exceeds its padded length, or the padded lengths do not cover the
            ``[batch * sequence]`` tokens (a kernel would read past them).
    """
    lengths = seq_lens[seq_lens >= 0]
    padded = seq_lens_padded[seq_lens_padded >= 0]
    zero = torch.zeros(1, dtype=torch.int64, device=seq_lens.device)
    cu, cu_padded = torch.cat([zero, lengths.cumsum(0)]), torch.cat([zero, padded.cumsum(0)])
    if lengths.shape != padded.shape or bool((lengths > padded).any()):
        raise ValueError(f"seq_lens {lengths.tolist()} do not fit in seq_lens_padded {padded.tolist()}")
    if int(cu_padded[-1]) != seq_lens.shape[0] * sequence:
        raise ValueError(f"seq_lens_padded: {int(cu_padded[-1])} tokens in all, not batch x sequence")
    return cu.to(torch.int32), cu_padded.to(torch.int32)


def emulated_varlen(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    starts: list[int],
    lengths: list[int],
    max_seqlen: int,
    scale: float | None,
) -> torch.Tensor:
    """Causal attention over spans of flattened tokens: ``query`` ``[tokens, heads, dim]``,
    ``key`` / ``value`` ``[tokens, kv heads, dim]``; span ``j`` is the tokens ``starts[j] ..
    starts[j] + lengths[j]``. A span attends only to itself, and only its first ``max_seqlen``
    tokens are computed (the rest, and every token of no span, is ``0``)."""
    out = torch.zeros_like(query)
    groups = query.shape[1] // key.shape[1]
    for start, length in zip(starts, lengths):
        length = min(length, max_seqlen)
        if length <= 0:
            continue
        span = slice(start, start + length)
        q = query[span].transpose(0, 1)
        k = key[span].transpose(0, 1).repeat_interleave(groups, dim=0)
        v = value[span].transpose(0, 1).repeat_interleave(groups, dim=0)
        out[span] = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale).transpose(0, 1)
    return out


def torch_varlen(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    starts: list[int],
    lengths: list[int],
    max_seqlen: int,
    scale: float | None,
) -> torch.Tensor:
    """``emulated_varlen`` through torch's ``torch.nn.attention.varlen.varlen_attn`` (a flash
    kernel: CUDA, bf16/fp16), with ``max_seqlen`` as its ``max_q`` / ``max_k``: the spans' tokens
    are gathered into one contiguous run, attended causally and scattered back; tokens of no span
    get ``0``."""
    from torch.nn.attention.varlen import varlen_attn

    # as emulated_varlen: a kernel launched for max_seqlen computes no token past it
    lengths = [max(0, min(n, max_seqlen)) for n in lengths]
    picked = torch.cat([torch.arange(s, s + n, device=query.device) for s, n in zip(starts, lengths)])
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device=query.device)
    attended = varlen_attn(
        query[picked],
        key[picked],
        value[picked],
        cu,
        cu,
        max_seqlen,
        max_seqlen,
        scale=scale,
        window_size=(-1, 0),
        enable_gqa=query.shape[1] != key.shape[1],
    )
    if not isinstance(attended, torch.Tensor):  # (output, aux) comes back only when return_aux is given
        raise TypeError(f"varlen_attn returned {type(attended).__name__}, expected the attention output tensor")
    out = torch.zeros_like(query)
    out[picked] = attended
    return out


KERNELS: dict[str, Callable[..., torch.Tensor]] = {"emulated": emulated_varlen, "torch_varlen": torch_varlen}
"""Varlen kernels the two varlen attention implementations can run on (``kernel=`` model kwarg)."""


def _flat(states: torch.Tensor) -> torch.Tensor:
    """``[batch, heads, sequence, dim]`` -> ``[batch * sequence, heads, dim]``."""
    return states.transpose(1, 2).reshape(-1, states.shape[1], states.shape[3])


def _unflat(out: torch.Tensor, batch: int) -> torch.Tensor:
    """``[batch * sequence, heads, dim]`` -> the ``[batch, sequence, heads, dim]`` attention
    implementations return."""
    return out.reshape(batch, -1, out.shape[1], out.shape[2])


def metadata_varlen_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """A transformers attention implementation that reads only the packed-metadata bundle:
    model kwargs ``packed_token_indices``, ``cu_seqlens``, ``max_seqlen`` (and ``kernel``, a
    ``KERNELS`` name, default ``"emulated"``); ``attention_mask`` is ignored. ``query``
    ``[batch, heads, sequence, dim]``; returns ``([batch, sequence, heads, dim], None)``."""
    index, cu = metadata_varlen_inputs(kwargs["packed_token_indices"], kwargs["cu_seqlens"])
    batch = query.shape[0]
    q, k, v = (_flat(x)[index] for x in (query, key, value))
    cu = cu.tolist()
    lengths = [b - a for a, b in zip(cu, cu[1:])]
    kernel = KERNELS[kwargs.get("kernel", "emulated")]
    packed = kernel(q, k, v, cu[:-1], lengths, int(kwargs["max_seqlen"]), scaling)
    out = torch.zeros_like(_flat(query))
    out[index] = packed
    return _unflat(out, batch), None


def thd_varlen_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """A transformers attention implementation that reads only the THD lengths: model kwargs
    ``seq_lens`` and ``seq_lens_padded`` (and ``kernel``); span ``j`` holds the flattened
    tokens from ``cu_padded[j]`` for ``seq_lens[j]`` tokens (``thd_varlen_inputs``), the rest is
    padding and gets ``0``. Shapes as ``metadata_varlen_attention``."""
    cu, cu_padded = thd_varlen_inputs(kwargs["seq_lens"], kwargs["seq_lens_padded"], query.shape[2])
    lengths = (cu[1:] - cu[:-1]).tolist()
    starts = cu_padded[:-1].tolist()
    batch = query.shape[0]
    q, k, v = (_flat(x) for x in (query, key, value))
    kernel = KERNELS[kwargs.get("kernel", "emulated")]
    return _unflat(kernel(q, k, v, starts, lengths, max(lengths, default=0), scaling), batch), None


def register_attention() -> None:
    """Register ``METADATA_ATTENTION`` and ``THD_ATTENTION`` in transformers'
    ``AttentionInterface`` (idempotent)."""
    from transformers import AttentionInterface

    AttentionInterface.register(METADATA_ATTENTION, metadata_varlen_attention)
    AttentionInterface.register(THD_ATTENTION, thd_varlen_attention)
