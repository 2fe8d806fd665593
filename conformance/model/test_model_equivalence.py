"""Model-level equivalence (``conformance/model/equivalence.py``): on every route a backend
declares, its batches of real corpus text train a tiny transformer exactly as each document
trained alone: logits, the trained-token set, per-token losses and the gradient.

These checks need transformers (the ``model`` extra: ``pip install 'batchspec[model]'``); without
it they are reported as skipped, with that command. A failure names the route, the attention
implementation, the batch, row and document span, the largest difference and its tolerance, and
is blamed on the clauses of the key that explains it (``mismatch_blame.blame``).
"""

from __future__ import annotations

import functools

import pytest

from batchspec.conformance.helpers.asserts import MODEL_EXTRA, ClauseFailure, skip
from batchspec.conformance.model.routes import ROUTES

MAX_SHOWN = 6


@functools.cache
def _models() -> dict:
    """The tiny model of each position kind (``Route.model``)."""
    from batchspec.conformance.model import models

    configs = {"rope": models.tiny_llama_config, "mrope": models.tiny_mrope_config, "absolute": models.tiny_gpt2_config}
    return {kind: models.build_model(config()) for kind, config in configs.items()}


def _cases():
    for route in ROUTES:
        for implementation in route.implementations:
            marks = [pytest.mark.requires(*route.requires), pytest.mark.clause(*route.clauses)]
            yield pytest.param(route, implementation, id=f"{route.name}-{implementation}", marks=marks)


@pytest.mark.parametrize(("route", "implementation"), list(_cases()))
def test_documents_train_as_alone(backend, route, implementation):
    """Every document of every batch on ``route`` trains as it does alone (module docstring)."""
    try:
        import transformers  # noqa: F401
    except ImportError as error:
        skip(f"the model checks need transformers, which could not be imported ({error})", MODEL_EXTRA)
    from batchspec.conformance.model.equivalence import check_route

    found = check_route(backend, route, _models()[route.model], implementation).mismatches
    if found:
        shown = "\n  ".join(str(m) for m in found[:MAX_SHOWN])
        more = f"\n  ... and {len(found) - MAX_SHOWN} more" if len(found) > MAX_SHOWN else ""
        clauses = tuple(dict.fromkeys(c for m in found for c in m.clauses))
        raise ClauseFailure(
            f"{len(found)} differences between the packed batch and its documents alone on route "
            f"{route.name} ({route.summary}):\n  {shown}{more}",
            clauses,
        )
