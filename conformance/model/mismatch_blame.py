"""Blame of the model-level equivalence check: which of the keys a route reads explains a
``Mismatch``. It substitutes the reference's value of each key that differs, one at a time,
and blames the clauses of the keys whose substitution removes the mismatch (``field_clauses``;
``labels`` per element, ``label_clauses``), a key built from another wrong key traced back to
it; when no key differs from the reference, the route's own clauses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

import torch

from batchspec import reference
from batchspec.conformance.golden.key_blame import OUTPUT_CLAUSES
from batchspec.conformance.helpers.asserts import SuiteError
from batchspec.conformance.helpers.fields import field_clauses, label_clauses, label_targets
from batchspec.conformance.helpers.sample_batches import rows_of
from batchspec.conformance.model.data import ModelBatch
from batchspec.conformance.model.documents import Document
from batchspec.conformance.model.evaluation import Mismatch, convert_route, evaluate
from batchspec.conformance.model.models import Model
from batchspec.conformance.model.routes import Route
from batchspec.reference.contract import PackedSequenceContract, TrainingBatch

__all__ = ["blame"]


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
        return "attention_document_ids", dict(reference.build_packed_sequence_metadata(ids))[key]
    if key in ("seq_lens", "seq_lens_padded") and isinstance(ids, torch.Tensor):
        # convert_batch_output's thd lengths read attention_document_ids alone
        lengths = reference.convert_batch_output(cast(TrainingBatch, {"attention_document_ids": ids}), "thd")
        return "attention_document_ids", dict(lengths)[key]
    doc_ids = batch.get("document_ids")
    # the suite's Contract is a PackedSequenceContract whose packed_mask_type is any string (a
    # route's is a valid one); enable_xdoc_attention reads the three keys given it
    contract = cast(PackedSequenceContract, route.contract)
    if key == "attention_document_ids" and isinstance(doc_ids, torch.Tensor):
        if not route.xdoc:
            return "document_ids", doc_ids
        joined = reference.enable_xdoc_attention(
            cast(
                TrainingBatch,
                {"document_ids": doc_ids, "attention_document_ids": doc_ids, "position_ids": torch.zeros_like(doc_ids)},
            ),
            contract,
        )
        return "document_ids", joined["attention_document_ids"]
    if key == "position_ids" and route.xdoc and isinstance(doc_ids, torch.Tensor) and before is not None:
        joined = reference.enable_xdoc_attention(
            cast(TrainingBatch, {"document_ids": doc_ids, "attention_document_ids": doc_ids, "position_ids": before}),
            contract,
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
    plain, _ = convert_route(reference, replace(route, xdoc=False), model_batch)
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
    expected, _ = convert_route(reference, route, model_batch)
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
        remaining = {m.key() for m in evaluate(model, route, implementation, model_batch, fixed, docs, kernel)[0]}
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
