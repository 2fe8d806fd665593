"""Model-level equivalence: a packed batch trains every document exactly as if it were trained
alone.

For one route (``ROUTES``: how a ``TrainingBatch`` reaches the model, ``wiring.py``) and one
attention implementation, a backend's batch goes through a tiny transformer and is compared,
document by document, with each document run alone (its tokens at positions ``0 ..``, no mask,
``sdpa`` or the same ``eager``), or under xdoc with the row's real tokens joined as one sequence:

- **logits** of every input token of the document;
- the **trained-token set**: the labels that are not ``ignore_index`` are exactly those whose
  target is a real token of the row (not padding), less the subdocument starts under
  ``mask_segment_starts``;
- the **per-token loss** of every trained token: the batch's label against the document's own
  next token;
- the **gradient** of the summed loss with respect to every weight: the packed batch's against
  the sum of the documents' own.

What the documents are comes from the input records alone (their tokens, positions and
``padding_length``), never from the backend or the reference. A difference is a ``Mismatch``
naming the route, implementation, batch, row, document span and the largest difference.
``blame`` then finds which of the keys the route reads explains it: it substitutes the
reference's value of each key that differs, one at a time, and blames the clauses of the keys
whose substitution removes the mismatch (``field_clauses``; ``labels`` per element,
``label_clauses``); when no key differs from the reference, the route's own clauses.

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
from dataclasses import dataclass, replace
from typing import Any

import torch

from batchspec import reference
from batchspec.conformance.golden.blame import OUTPUT_CLAUSES
from batchspec.conformance.helpers.asserts import SuiteError
from batchspec.conformance.helpers.fields import field_clauses, label_clauses, label_targets
from batchspec.conformance.helpers.inputs import Contract, Row, row_positions, rows_of, unpacked_row
from batchspec.conformance.model import wiring
from batchspec.conformance.model.data import ModelBatch, packed_batches, unpacked_batches
from batchspec.conformance.model.models import Model

__all__ = [
    "IMAGE_GRID",
    "ROUTES",
    "TOLERANCES",
    "Document",
    "Mismatch",
    "Route",
    "RouteResult",
    "alone_logits",
    "check_route",
    "documents",
    "largest_difference",
    "mrope_positions",
    "route_batches",
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

IMAGE_GRID = (1, 2, 3)
"""The (temporal, height, width) grid of the image block the mRoPE routes place in every document
of at least ``IMAGE_AT + 6`` tokens: its 6 tokens take 3-axis positions, as a Qwen2-VL processor
numbers an image (the token ids stay text; the model does not care)."""
IMAGE_AT = 2


@dataclass(frozen=True)
class Route:
    """How a ``TrainingBatch`` reaches the model.

    ``feed``: ``"mask"`` (``attention_mask`` bool ``[batch, 1, sequence, sequence]``, as given to
    ``sdpa``, additive to ``eager``), ``"metadata"`` (the packed-metadata bundle, through
    ``wiring.METADATA_ATTENTION``) or ``"thd"`` (``seq_lens`` / ``seq_lens_padded``, through
    ``wiring.THD_ATTENTION``). ``model``: the positions the route's model reads
    (``models.position_kind``); on ``"mrope"`` positions ``[3, batch, sequence]`` are numbered as
    a processor does (``mrope_positions``), then, under ``xdoc``, go through
    ``enable_xdoc_attention``, whose ids give the block-causal mask. ``reads``: the keys the
    model consumes.
    """

    name: str
    summary: str
    requires: tuple[str, ...]
    clauses: tuple[str, ...]
    feed: str
    reads: tuple[str, ...]
    contract: Contract = Contract()
    output_format: str = "batched"
    xdoc: bool = False
    mask_segment_starts: bool = False
    ignore_index: int = -100
    unpacked: bool = False
    model: str = "rope"  # the positions the route's model reads: "rope", "mrope", "absolute" (models.position_kind)
    # a mask route also under eager (its additive mask); the wiring is the same on every mask
    # route, so the suite runs it on two (check-model runs the implementations a user names)
    eager: bool = False

    @property
    def mrope(self) -> bool:
        """Positions ``[3, batch, sequence]`` numbered as a processor does, for an mRoPE model."""
        return self.model == "mrope"

    @property
    def implementations(self) -> tuple[str, ...]:
        """The attention implementations the route runs under on the CPU."""
        return {
            "mask": ("sdpa", "eager") if self.eager else ("sdpa",),
            "metadata": (wiring.METADATA_ATTENTION,),
            "thd": (wiring.THD_ATTENTION,),
        }[self.feed]


_MASK_READS = ("input_ids", "position_ids", "attention_mask", "labels")
_METADATA_READS = ("input_ids", "position_ids", "packed_token_indices", "cu_seqlens", "max_seqlen", "labels")
_THD_READS = ("input_ids", "position_ids", "seq_lens", "seq_lens_padded", "labels")

ROUTES: tuple[Route, ...] = (
    Route(
        "block_causal",
        "batched, block-causal attention_mask",
        ("convert_text_batch",),
        ("ctb-shift", "ctb-positions", "ctb-padding-labels", "ctb-cross-document-targets", "batched-block-causal"),
        "mask",
        _MASK_READS,
        eager=True,
    ),
    Route(
        "metadata",
        "batched, document_ids mask + packed-metadata bundle, mask_segment_starts, ignore_index -1",
        ("convert_text_batch",),
        (
            "ctb-shift",
            "ctb-positions",
            "ctb-padding-labels",
            "ctb-segment-starts",
            "ctb-ignore-index",
            "batched-metadata",
        ),
        "metadata",
        _METADATA_READS,
        Contract("document_ids", True),
        mask_segment_starts=True,
        ignore_index=-1,
    ),
    Route(
        "thd",
        'output_format="thd", seq_lens / seq_lens_padded',
        ("convert_text_batch", "thd"),
        ("ctb-shift", "ctb-positions", "ctb-padding-labels", "thd-lengths"),
        "thd",
        _THD_READS,
        output_format="thd",
    ),
    Route(
        "xdoc",
        "xdoc, block-causal attention_mask, mask_segment_starts (original boundaries)",
        ("convert_text_batch", "xdoc"),
        (
            "ctb-xdoc",
            "ctb-selected-ids",
            "xdoc-positions",
            "xdoc-attention-ids",
            "batched-block-causal",
            "ctb-segment-starts",
        ),
        "mask",
        _MASK_READS,
        xdoc=True,
        mask_segment_starts=True,
    ),
    Route(
        "xdoc_metadata",
        "xdoc, packed-metadata bundle (row-long spans)",
        ("convert_text_batch", "xdoc"),
        ("ctb-xdoc", "ctb-selected-ids", "xdoc-positions", "batched-metadata"),
        "metadata",
        _METADATA_READS,
        Contract("block_causal", True),
        xdoc=True,
    ),
    Route(
        "mrope",
        "3-axis positions (Qwen2-VL text model), block-causal attention_mask",
        ("convert_text_batch",),
        ("ctb-shift", "ctb-padding-labels", "batched-block-causal"),
        "mask",
        ("input_ids", "attention_mask", "labels"),
        model="mrope",
    ),
    Route(
        "absolute_positions",
        "learned absolute position embeddings (GPT-2), block-causal attention_mask",
        ("convert_text_batch",),
        ("ctb-shift", "ctb-positions", "ctb-padding-labels", "batched-block-causal"),
        "mask",
        _MASK_READS,
        model="absolute",
        eager=True,
    ),
    Route(
        "mrope_xdoc",
        "3-axis positions through enable_xdoc_attention, block-causal mask of its ids",
        ("convert_text_batch", "xdoc"),
        ("xdoc-positions", "xdoc-attention-ids", "ctb-shift"),
        "mask",
        ("input_ids", "position_ids", "attention_document_ids", "labels"),
        xdoc=True,
        model="mrope",
    ),
    Route(
        "unpacked",
        "pad_to_length, block-causal attention_mask",
        ("convert_text_batch", "unpacked"),
        ("unpacked-padding", "unpacked-same-route", "batched-block-causal", "ctb-padding-labels", "ctb-shift"),
        "mask",
        _MASK_READS,
        unpacked=True,
    ),
    Route(
        "unpacked_thd",
        'pad_to_length, output_format="thd"',
        ("convert_text_batch", "thd", "unpacked"),
        ("unpacked-padding", "unpacked-same-route", "thd-lengths", "ctb-padding-labels"),
        "thd",
        _THD_READS,
        output_format="thd",
        unpacked=True,
    ),
)


def route_batches(route: Route) -> tuple[ModelBatch, ...]:
    """The input batches of ``route``: unpacked records for the unpacked routes, packed rows
    otherwise (``data.py``)."""
    return unpacked_batches() if route.unpacked else packed_batches()


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


def _padded_rows(model_batch: ModelBatch) -> list[Row]:
    """The batch's unshifted rows, after the unpacked route's padding when it has one (the
    appended pads join the padding [unpacked-padding])."""
    rows = rows_of(model_batch.sample_batch)
    if model_batch.pad_to_length is None:
        return rows
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


def _convert(impl: Any, route: Route, model_batch: ModelBatch) -> tuple[dict, torch.Tensor | None]:
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
        out["position_ids"] = _mrope_batch_positions(out["position_ids"], _padded_rows(model_batch))
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
    out: list[torch.Tensor | None] = [None] * len(docs)
    for length, members in by_length.items():
        ids = torch.tensor([docs[k].tokens for k in members])
        if mrope:
            positions = torch.stack([mrope_positions(docs[k].pieces)[:, :length] for k in members], dim=1)
        else:
            positions = torch.arange(length).expand(len(members), length)
        logits = model.logits(ids, positions)
        for j, k in enumerate(members):
            out[k] = logits[j]
    return out


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


def _evaluate(
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
        largest = _worse(largest, diff / max(1.0, float(logits.detach().abs().max())))
        if not diff <= allowed:  # NaN fails too
            miss("logits", doc.row, doc.span, diff, allowed)
        trained, targets = _target_tensor(doc)
        trained, targets = trained.to(packed.device), model.fold(targets.to(packed.device))
        doc_losses = torch.nn.functional.cross_entropy(logits, targets, reduction="none") * trained
        alone_total = alone_total + doc_losses.sum()
        got = kept[doc.row, span]
        if not torch.equal(got, trained):
            wrong = (torch.nonzero(got != trained).flatten() + doc.start).tolist()
            extra = [i for i in wrong if bool(got[i - doc.start])]
            lost = [i for i in wrong if not bool(got[i - doc.start])]
            detail = []
            if extra:
                detail.append(f"inputs {extra[:8]} are trained but must not be")
            if lost:
                detail.append(f"inputs {lost[:8]} are not trained but must be")
            miss("trained tokens", doc.row, doc.span, "; ".join(detail), None)
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
    parameters = _parameters(model)
    packed_grads = torch.autograd.grad(packed_total, parameters, allow_unused=True, retain_graph=False)
    alone_grads = torch.autograd.grad(alone_total, parameters, allow_unused=True)
    worst, where, scale = 0.0, "", 0.0
    for (name, _), g_packed, g_alone in zip(_named_parameters(model), packed_grads, alone_grads):
        g_packed = torch.zeros(()) if g_packed is None else g_packed
        g_alone = torch.zeros(()) if g_alone is None else g_alone
        scale = _worse(scale, float(g_alone.abs().max()))
        diff = float((g_packed - g_alone).abs().max())
        if math.isnan(diff) or diff > worst:
            worst, where = _worse(worst, diff), name
        if math.isnan(worst):
            break
    allowed = tolerance * max(1.0, scale)
    if exact is not None:
        allowed = max(allowed, NOISE_FACTOR * _gradient_noise(model, docs, alone_grads, implementation, route.mrope))
    if not worst <= allowed:
        miss("gradient", None, "all rows", worst, allowed, detail=f"largest in {where}")
    return found, largest


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
    total = 0.0
    for doc, logits in zip(docs, alone_logits(twin, docs, implementation, mrope=mrope)):
        trained, targets = _target_tensor(doc)
        trained, targets = trained.to(logits.device), twin.fold(targets.to(logits.device))
        total = total + (torch.nn.functional.cross_entropy(logits, targets, reduction="none") * trained).sum()
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


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape != b.shape or a.dtype != b.dtype or not torch.equal(a.cpu(), b.cpu())
    return a != b


def _key_clauses(route: Route, key: str, got: Any, want: Any, model_batch: ModelBatch) -> tuple[str, ...]:
    """The clauses a wrong ``key`` breaks on ``route``."""
    if route.mrope and route.xdoc and key in ("position_ids", "attention_document_ids"):
        return OUTPUT_CLAUSES["enable_xdoc_attention"][key]
    if key == "labels" and isinstance(got, torch.Tensor) and got.shape == want.shape:
        targets = label_targets(
            rows_of(model_batch.sample_batch), route.ignore_index, route.mask_segment_starts, model_batch.pad_to_length
        )
        return label_clauses(got, want, targets)
    conditions = [c for c, on in (("xdoc", route.xdoc), ("unpacked", route.unpacked)) if on]
    return field_clauses(key, want, route.clauses, conditions) or route.clauses


def _derived(route: Route, key: str, batch: Mapping[str, Any], before: torch.Tensor | None) -> tuple[str, Any] | None:
    """``(source, value)``: the key ``key`` is built from in ``batch`` and the value SPEC builds
    from the batch's own ``source`` (the reference's functions), or ``None`` when ``key`` is
    not built from another key here. ``before``: under xdoc, the positions before
    ``enable_xdoc_attention`` (xdoc positions are built from them and ``document_ids``)."""
    ids = batch.get("attention_document_ids")
    if key == "attention_mask" and isinstance(ids, torch.Tensor):
        mask = batch[key]
        return "attention_document_ids", reference.block_causal_mask(ids) if mask.dtype == torch.bool else ids
    if key in ("packed_token_indices", "cu_seqlens", "max_seqlen") and isinstance(ids, torch.Tensor):
        return "attention_document_ids", reference.build_packed_sequence_metadata(ids)[key]
    if key in ("seq_lens", "seq_lens_padded") and isinstance(ids, torch.Tensor):
        return "attention_document_ids", reference.convert_batch_output({"attention_document_ids": ids}, "thd")[key]
    doc_ids = batch.get("document_ids")
    if key == "attention_document_ids" and isinstance(doc_ids, torch.Tensor):
        if not route.xdoc:
            return "document_ids", doc_ids
        joined = reference.enable_xdoc_attention(
            {"document_ids": doc_ids, "attention_document_ids": doc_ids, "position_ids": torch.zeros_like(doc_ids)},
            route.contract,
        )
        return "document_ids", joined["attention_document_ids"]
    if key == "position_ids" and route.xdoc and isinstance(doc_ids, torch.Tensor) and before is not None:
        joined = reference.enable_xdoc_attention(
            {"document_ids": doc_ids, "attention_document_ids": doc_ids, "position_ids": before}, route.contract
        )
        return "document_ids", joined["position_ids"]
    return None


def _cause(
    route: Route, key: str, batch: Mapping[str, Any], expected: Mapping[str, Any], before: torch.Tensor | None
) -> str:
    """The key a wrong ``key`` comes from: while ``key`` is what SPEC builds from the batch's
    own source key and that source is itself wrong, the source (a bug in ``document_ids`` is
    blamed on it, not on the mask built from it)."""
    while key in batch and (found := _derived(route, key, batch, before)) is not None:
        source, built = found
        if (
            _differs(batch[key], built)
            or source not in expected
            or source not in batch
            or not _differs(batch[source], expected[source])
        ):
            break
        key = source
    return key


def _before_xdoc(route: Route, model_batch: ModelBatch, backend_before: torch.Tensor | None) -> torch.Tensor | None:
    """The positions xdoc translated: on the mRoPE xdoc route those the backend's
    ``enable_xdoc_attention`` was given; on the text xdoc routes the correct unshifted ones
    ([ctb-positions]: the reference's conversion with xdoc off)."""
    if not route.xdoc:
        return None
    if route.mrope:
        return backend_before
    plain, _ = _convert(reference, replace(route, xdoc=False), model_batch)
    return plain["position_ids"]


def blame(
    model: Model,
    route: Route,
    implementation: str,
    model_batch: ModelBatch,
    batch: Mapping[str, Any],
    found: Sequence[Mismatch],
    docs: Sequence[Document],
    kernel: str,
    backend_before: torch.Tensor | None = None,
) -> list[Mismatch]:
    """``found`` with clauses: for each key the route reads whose value differs from the
    reference's, the batch is rerun with the reference's value of that key alone; the keys
    whose substitution removes a mismatch explain it (a mismatch no single key explains: every
    differing key). A key built from another wrong key of the batch is traced back to it
    (``_cause``); the clauses are those of the keys found. A mismatch where no key differs
    from the reference is blamed on the route's clauses (the contract itself)."""
    expected, _ = _convert(reference, route, model_batch)
    before = _before_xdoc(route, model_batch, backend_before)
    # a key the route reads that the backend left out, or that differs from the reference's
    differing = [k for k in route.reads if k in expected and (k not in batch or _differs(batch[k], expected[k]))]
    broken = [m for m in found if m.quantity == "forward pass"]
    if broken and not differing:
        # the reference's own keys do not run: the model, the kernel or the machine, not the backend
        raise SuiteError(f"the model check could not run (the keys equal the reference's): {broken[0]}")
    explains: dict[tuple, list[str]] = {}
    for key in differing:
        fixed = dict(batch)
        fixed[key] = expected[key]
        remaining = {m.key() for m in _evaluate(model, route, implementation, model_batch, fixed, docs, kernel)[0]}
        for m in found:
            if m.key() not in remaining:
                explains.setdefault(m.key(), []).append(key)
    out = []
    for m in found:
        keys = dict.fromkeys(_cause(route, k, batch, expected, before) for k in explains.get(m.key()) or differing)
        clauses = tuple(
            dict.fromkeys(c for k in keys for c in _key_clauses(route, k, batch.get(k), expected.get(k), model_batch))
        )
        out.append(replace(m, clauses=clauses or route.clauses))
    return out


def _worse(a: float, b: float) -> float:
    """The larger of two differences, NaN when either is."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


@dataclass(frozen=True)
class RouteResult:
    """What ``check_route`` found: the blamed ``mismatches`` (empty: equivalent) and the
    ``largest`` logit difference of any document, relative to its scale (``max(1, max |logit|)``;
    NaN when a forward pass failed)."""

    mismatches: tuple[Mismatch, ...]
    largest: float

    @property
    def equivalent(self) -> bool:
        return not self.mismatches


def check_route(
    backend: Any,
    route: Route,
    model: Model,
    implementation: str,
    *,
    batches: Sequence[ModelBatch] | None = None,
    kernel: str = "emulated",
) -> RouteResult:
    """``backend``'s batches on ``route`` under ``implementation`` against their documents
    alone: every blamed ``Mismatch`` and the largest difference. ``batches``: default
    ``route_batches(route)``; ``kernel``: the varlen kernel (``wiring.KERNELS``).

    Raises:
        SuiteError: the forward pass fails on keys that equal the reference's (the model, the
            kernel or the machine cannot run the check; no clause is blamed).
    """
    wiring.register_attention()
    found: list[Mismatch] = []
    largest = 0.0
    for model_batch in route_batches(route) if batches is None else batches:
        rows = _padded_rows(model_batch)
        docs = documents(rows, xdoc=route.xdoc, mask_segment_starts=route.mask_segment_starts)
        batch, before = _convert(backend, route, model_batch)
        here, worst = _evaluate(model, route, implementation, model_batch, batch, docs, kernel)
        largest = _worse(largest, worst)
        if here:
            found.extend(blame(model, route, implementation, model_batch, batch, here, docs, kernel, before))
    return RouteResult(tuple(found), largest)
