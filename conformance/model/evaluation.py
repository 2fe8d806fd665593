"""The comparison of the model-level equivalence check (conformance/model/equivalence.py): one
batch through the model on a route (``convert_route``, ``evaluate``) against each document
alone (``alone_logits``), as logits, trained tokens, per-token losses and the gradient; each
difference beyond the tolerance a ``Mismatch``.

Tolerances (``TOLERANCES``) are relative to the largest value compared, and at least absolute:
``|packed - alone| <= tolerance * max(1, max |alone|)`` per document for logits and losses, over
all weights for the gradient (the tiny models' logits reach about 20). In float64 two runs that
compute the same thing differ only by summation order, about ``1e-15`` (unit roundoff
``1.1e-16`` over a few hundred terms per dot product and two layers); ``1e-9`` leaves six orders
of margin, while attending one wrong key or shifting one position moves logits by ``1e-3`` or
more. ``eager`` attention runs its softmax in float32 (unit roundoff ``6e-8``), so its runs
agree to about ``3e-7`` of the largest logit: ``1e-5``. In bfloat16 (GPU) the packed kernel and
``sdpa`` alone round differently at every layer (unit roundoff ``3.9e-3``), by an amount that
grows with the model's sharpness, so the tolerance is measured: ``NOISE_FACTOR`` times the
difference between each document alone in bfloat16 and in float64 (the model's ``twin``, the
float64 weights it was rounded from), and at least ``1e-2`` (float32: the same, at least ``1e-5``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from batchspec import reference
from batchspec.conformance.helpers.sample_batches import Row
from batchspec.conformance.model import wiring
from batchspec.conformance.model.data import ModelBatch
from batchspec.conformance.model.documents import Document, documents, mrope_positions, padded_rows
from batchspec.conformance.model.models import Model
from batchspec.conformance.model.routes import Route

__all__ = [
    "NOISE_FACTOR",
    "TOLERANCES",
    "Mismatch",
    "alone_logits",
    "convert_route",
    "evaluate",
    "largest_difference",
    "worse",
]


TOLERANCES: dict[tuple[torch.dtype, str], float] = {
    (torch.float64, "sdpa"): 1e-9,
    (torch.float64, "eager"): 1e-5,
    (torch.float64, wiring.METADATA_ATTENTION): 1e-9,
    (torch.float64, wiring.THD_ATTENTION): 1e-9,
    # below float64: floors; the tolerance is measured (NOISE_FACTOR), see the module docstring
    **{
        (dtype, implementation): floor
        for dtype, floor in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2))
        for implementation in ("sdpa", "eager", wiring.METADATA_ATTENTION, wiring.THD_ATTENTION)
    },
}


@dataclass(frozen=True)
class Mismatch:
    """A document (or the whole batch, for the gradient) the packed batch does not train as
    alone: what differs (``logits``, ``trained tokens``, ``loss``, ``gradient``, ``forward
    pass``), where, by how much (``tolerance``: the difference allowed there), and the clauses
    ``blame`` put it on."""

    route: str
    implementation: str
    batch: str
    quantity: str
    row: int | None
    span: str
    difference: float | str
    tolerance: float | None
    clauses: tuple[str, ...] = ()
    detail: str = ""  # shown, not part of the key (the gradient's worst weight moves with a fix)

    def key(self) -> tuple:
        return (self.quantity, self.row, self.span)

    def __str__(self) -> str:
        where = f"row {self.row}, document {self.span}" if self.row is not None else self.span
        size = (
            f"max difference {self.difference:.3g} (allowed {self.tolerance:.3g})"
            if isinstance(self.difference, float)
            else self.difference
        )
        blamed = f" [{', '.join(self.clauses)}]" if self.clauses else ""
        detail = f", {self.detail}" if self.detail else ""
        return f"route {self.route} ({self.implementation}), {self.batch}: {where}: {self.quantity}: {size}{detail}{blamed}"


def convert_route(impl: Any, route: Route, model_batch: ModelBatch) -> tuple[dict, torch.Tensor | None]:
    """``(batch, before)``: ``impl.convert_text_batch`` of the batch with the route's options
    (and, on the mRoPE routes, the 3-axis positions and ``impl.enable_xdoc_attention``);
    ``before``: on the mRoPE xdoc route, the positions ``enable_xdoc_attention`` was given."""
    contract = route.contract
    out = impl.convert_text_batch(
        model_batch.sample_batch,
        contract,
        route.ignore_index,
        route.mask_segment_starts,
        route.xdoc and not route.mrope,
        route.output_format,
        model_batch.pad_to_length,
        model_batch.pad_token_id,
    )
    before = None
    if route.mrope:
        out = dict(out)
        out["position_ids"] = _mrope_batch_positions(out["position_ids"], padded_rows(model_batch))
        if route.xdoc:
            before = out["position_ids"]
            out = dict(impl.enable_xdoc_attention(out, contract))
    return out, before


def _mrope_batch_positions(text_positions: torch.Tensor, rows: Sequence[Row]) -> torch.Tensor:
    """``[3, batch, sequence]`` positions as a processor gives them: every subdocument numbered
    by ``mrope_positions`` of its layout, padding keeping its text positions on every axis."""
    out = text_positions.unsqueeze(0).repeat(3, 1, 1)
    for doc in documents(rows, xdoc=False, mask_segment_starts=False):
        out[:, doc.row, doc.start : doc.stop] = mrope_positions(doc.pieces)[:, : doc.stop - doc.start]
    return out


def _forward(model: Model, route: Route, implementation: str, batch: Mapping[str, Any], kernel: str) -> torch.Tensor:
    """The packed batch's logits ``[batch, sequence, vocab]`` through ``route``'s wiring."""
    model.set_attention(implementation)
    kwargs: dict[str, Any] = {}
    if route.feed == "mask":
        if route.mrope and route.xdoc:  # enable_xdoc_attention's ids: their block-causal mask
            mask = reference.block_causal_mask(batch["attention_document_ids"])
        else:
            mask = batch["attention_mask"]
        kwargs["attention_mask"] = wiring.additive_mask(mask, model.dtype) if implementation == "eager" else mask
    elif route.feed == "metadata":
        kwargs.update(
            packed_token_indices=batch["packed_token_indices"],
            cu_seqlens=batch["cu_seqlens"],
            max_seqlen=batch["max_seqlen"],
            kernel=kernel,
        )
    else:
        kwargs.update(seq_lens=batch["seq_lens"], seq_lens_padded=batch["seq_lens_padded"], kernel=kernel)
    return model.logits(batch["input_ids"], batch["position_ids"], **kwargs)


def alone_logits(
    model: Model, docs: Sequence[Document], implementation: str, *, mrope: bool = False
) -> list[torch.Tensor]:
    """Each document's logits ``[tokens, vocab]`` run alone: its tokens as one sequence at
    positions ``0 ..`` (with ``mrope``, its own 3-axis layout), no mask, no cache; ``eager``
    under ``eager``, else ``sdpa``."""
    model.set_attention("eager" if implementation == "eager" else "sdpa")
    by_length: dict[int, list[int]] = {}
    for k, doc in enumerate(docs):
        by_length.setdefault(len(doc.tokens), []).append(k)
    out: dict[int, torch.Tensor] = {}
    for length, members in by_length.items():
        ids = torch.tensor([docs[k].tokens for k in members])
        if mrope:
            positions = torch.stack([mrope_positions(docs[k].pieces)[:, :length] for k in members], dim=1)
        else:
            positions = torch.arange(length).expand(len(members), length)
        logits = model.logits(ids, positions)
        for j, k in enumerate(members):
            out[k] = logits[j]
    return [out[k] for k in range(len(docs))]


def largest_difference(packed: torch.Tensor, docs: Sequence[Document], alone: Sequence[torch.Tensor]) -> float:
    """The largest absolute difference between packed logits ``[batch, sequence, vocab]`` and
    the documents' own (``alone_logits``), over every document's tokens (NaN if any is NaN)."""
    worst = 0.0
    for doc, logits in zip(docs, alone):
        diff = float((packed[doc.row, doc.start : doc.stop] - logits).detach().abs().max())
        if math.isnan(diff):
            return diff
        worst = max(worst, diff)
    return worst


def _target_tensor(doc: Document) -> tuple[torch.Tensor, torch.Tensor]:
    """``(trained, targets)``: bool and int64 ``[tokens]`` of a document's targets."""
    trained = torch.tensor([t is not None for t in doc.targets])
    targets = torch.tensor([t if t is not None else 0 for t in doc.targets])
    return trained, targets


def evaluate(
    model: Model,
    route: Route,
    implementation: str,
    model_batch: ModelBatch,
    batch: Mapping[str, Any],
    docs: Sequence[Document],
    kernel: str,
) -> tuple[list[Mismatch], float]:
    """``(mismatches, largest)``: every ``Mismatch`` of ``batch`` against its documents alone
    (unblamed), and the largest logit difference relative to its document's scale (NaN when
    the forward pass failed)."""
    tolerance = TOLERANCES[(model.dtype, implementation)]
    found: list[Mismatch] = []
    largest = 0.0

    def miss(quantity, row, span, difference, tol=tolerance, detail=""):
        found.append(
            Mismatch(route.name, implementation, model_batch.name, quantity, row, span, difference, tol, detail=detail)
        )

    model.module.zero_grad(set_to_none=True)
    if model.head is not None:
        model.head.zero_grad(set_to_none=True)
    try:
        packed = _forward(model, route, implementation, batch, kernel)
    except (ValueError, TypeError, IndexError, RuntimeError, KeyError) as error:
        # what a kernel would read out of bounds, or a key the wiring needs that is missing
        miss("forward pass", None, "the whole batch", f"{type(error).__name__}: {error}", None)
        return found, math.nan
    labels = batch["labels"].to(packed.device)
    kept = labels != route.ignore_index
    valid = kept & (labels >= 0)  # a kept label must be a token id (any other value is reported)
    losses = (
        torch.nn.functional.cross_entropy(
            packed.transpose(1, 2), model.fold(torch.where(valid, labels, 0)), reduction="none"
        )
        * valid
    )
    packed_total = losses.sum()
    alone = alone_logits(model, docs, implementation, mrope=route.mrope)
    exact = _exact_alone(model, docs, implementation, route.mrope)
    alone_total = packed_total.new_zeros(())
    for k, (doc, logits) in enumerate(zip(docs, alone)):
        span = slice(doc.start, doc.stop)
        diff = float((packed[doc.row, span] - logits).detach().abs().max())
        allowed = tolerance * max(1.0, float(logits.detach().abs().max()))
        if exact is not None:  # the rounding of the low precision itself, times NOISE_FACTOR
            allowed = max(allowed, NOISE_FACTOR * float((logits.detach().double() - exact[k][0]).abs().max()))
        largest = worse(largest, diff / max(1.0, float(logits.detach().abs().max())))
        if not diff <= allowed:  # NaN fails too
            miss("logits", doc.row, doc.span, diff, allowed)
        trained, targets = _target_tensor(doc)
        trained, targets = trained.to(packed.device), model.fold(targets.to(packed.device))
        doc_losses = torch.nn.functional.cross_entropy(logits, targets, reduction="none") * trained
        alone_total = alone_total + doc_losses.sum()
        got = kept[doc.row, span]
        if not torch.equal(got, trained):
            miss("trained tokens", doc.row, doc.span, _trained_difference(got, trained, doc.start), None)
        both = got & trained
        bad_label = both & ~valid[doc.row, span]
        if bool(bad_label.any()):
            i = int(torch.nonzero(bad_label)[0]) + doc.start
            miss("loss", doc.row, doc.span, f"label {int(labels[doc.row, i])} at input {i} is not a token id", None)
        both = both & valid[doc.row, span]
        if bool(both.any()):
            diff = float((losses[doc.row, span] - doc_losses).detach().abs()[both].max())
            allowed = tolerance * max(1.0, float(doc_losses.detach().max()))
            if exact is not None:
                noise = (doc_losses.detach().double() - exact[k][1](targets)).abs()[both]
                allowed = max(allowed, NOISE_FACTOR * float(noise.max()))
            if not diff <= allowed:
                miss("loss", doc.row, doc.span, diff, allowed)
    worst, allowed, where = _gradient_difference(
        model, docs, implementation, route.mrope, packed_total, alone_total, tolerance, exact is not None
    )
    if not worst <= allowed:
        miss("gradient", None, "all rows", worst, allowed, detail=f"largest in {where}")
    return found, largest


def _trained_difference(got: torch.Tensor, trained: torch.Tensor, start: int) -> str:
    """Which of a document's inputs (``start`` + offset) the packed batch trains wrongly: ``got``
    and ``trained`` are bool ``[tokens]``, the packed batch's and the document's own."""
    wrong = (torch.nonzero(got != trained).flatten() + start).tolist()
    extra = [i for i in wrong if bool(got[i - start])]
    lost = [i for i in wrong if not bool(got[i - start])]
    detail = []
    if extra:
        detail.append(f"inputs {extra[:8]} are trained but must not be")
    if lost:
        detail.append(f"inputs {lost[:8]} are not trained but must be")
    return "; ".join(detail)


def _gradient_difference(
    model: Model,
    docs: Sequence[Document],
    implementation: str,
    mrope: bool,
    packed_total: torch.Tensor,
    alone_total: torch.Tensor,
    tolerance: float,
    low_precision: bool,
) -> tuple[float, float, str]:
    """``(largest difference, allowed, parameter name)`` between the gradients of the packed
    loss and of the documents' losses alone; ``low_precision`` (a dtype with a float64 reference)
    allows ``NOISE_FACTOR`` times the rounding of the documents alone."""
    parameters = _parameters(model)
    packed_grads = torch.autograd.grad(packed_total, parameters, allow_unused=True, retain_graph=False)
    alone_grads = torch.autograd.grad(alone_total, parameters, allow_unused=True)
    worst, where, scale = 0.0, "", 0.0
    for (name, _), g_packed, g_alone in zip(_named_parameters(model), packed_grads, alone_grads):
        g_packed = torch.zeros(()) if g_packed is None else g_packed
        g_alone = torch.zeros(()) if g_alone is None else g_alone
        scale = worse(scale, float(g_alone.abs().max()))
        diff = float((g_packed - g_alone).abs().max())
        if math.isnan(diff) or diff > worst:
            worst, where = worse(worst, diff), name
        if math.isnan(worst):
            break
    allowed = tolerance * max(1.0, scale)
    if low_precision:
        allowed = max(allowed, NOISE_FACTOR * _gradient_noise(model, docs, alone_grads, implementation, mrope))
    return worst, allowed, where


NOISE_FACTOR = 4.0
"""A low-precision run is allowed this many times the difference between its documents alone and
the same documents in float64: packed and alone both round, each about that much."""


def _exact_alone(model: Model, docs, implementation: str, mrope: bool):
    """For a low-precision model: per document, its float64 twin's logits alone and a function
    from targets to its per-token losses; ``None`` for a float64 model."""
    if model.twin is None:
        return None
    with torch.no_grad():
        logits = alone_logits(model.twin, docs, implementation, mrope=mrope)
    return [
        (lg, lambda targets, lg=lg: torch.nn.functional.cross_entropy(lg, targets, reduction="none")) for lg in logits
    ]


def _gradient_noise(model: Model, docs, low_grads, implementation: str, mrope: bool) -> float:
    """The largest difference between the low-precision documents' gradient and the float64
    twin's: what the low precision itself costs the gradient."""
    twin = model.twin
    if twin is None:
        raise ValueError(f"_gradient_noise: a low-precision model with a float64 twin, got {model.dtype} without one")
    losses = []
    for doc, logits in zip(docs, alone_logits(twin, docs, implementation, mrope=mrope)):
        trained, targets = _target_tensor(doc)
        trained, targets = trained.to(logits.device), twin.fold(targets.to(logits.device))
        losses.append((torch.nn.functional.cross_entropy(logits, targets, reduction="none") * trained).sum())
    total = sum(losses[1:], losses[0])
    exact = torch.autograd.grad(total, _parameters(twin), allow_unused=True)
    noise = 0.0
    for low, high in zip(low_grads, exact):
        if low is not None and high is not None:
            noise = max(noise, float((low.double() - high).abs().max()))
    return noise


def _named_parameters(model: Model) -> list[tuple[str, torch.nn.Parameter]]:
    named = list(model.module.named_parameters())
    if model.head is not None:
        named += [(f"head.{n}", p) for n, p in model.head.named_parameters()]
    return named


def _parameters(model: Model) -> list[torch.nn.Parameter]:
    return [p for _, p in _named_parameters(model)]


def worse(a: float, b: float) -> float:
    """The larger of two differences, NaN when either is."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)
