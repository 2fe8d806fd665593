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


The pieces: ``routes.py`` (``ROUTES``), ``documents.py`` (each document alone, from the input
records), ``evaluation.py`` (the comparison and its tolerances, ``TOLERANCES``), ``mismatch_blame.py``
(which keys explain a mismatch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from batchspec.conformance.model import wiring
from batchspec.conformance.model.data import ModelBatch
from batchspec.conformance.model.documents import documents, padded_rows
from batchspec.conformance.model.evaluation import Mismatch, convert_route, evaluate, worse
from batchspec.conformance.model.mismatch_blame import blame
from batchspec.conformance.model.models import Model
from batchspec.conformance.model.routes import Route, route_batches

__all__ = ["RouteResult", "check_route"]


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
        rows = padded_rows(model_batch)
        docs = documents(rows, xdoc=route.xdoc, mask_segment_starts=route.mask_segment_starts)
        batch, before = convert_route(backend, route, model_batch)
        here, worst = evaluate(model, route, implementation, model_batch, batch, docs, kernel)
        largest = worse(largest, worst)
        if here:
            found.extend(blame(model, route, implementation, model_batch, batch, here, docs, kernel, before))
    return RouteResult(tuple(found), largest)
