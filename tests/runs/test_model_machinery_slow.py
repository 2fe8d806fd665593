"""The model-level checks' machinery on whole routes (the slow part of
``tests/unit/test_model_machinery.py``): a bfloat16 model is held to its own rounding and still
sees a wrong mask; a key the route reads that the backend leaves out is blamed on that key.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from batchspec import reference
from batchspec.conformance.model.data import packed_batches
from batchspec.conformance.model.equivalence import check_route
from batchspec.conformance.model.models import build_model, tiny_llama_config
from batchspec.conformance.model.routes import ROUTES


def test_a_bfloat16_model_is_held_to_its_own_rounding_and_still_sees_a_wrong_mask():
    """A bfloat16 run is allowed NOISE_FACTOR times what bfloat16 costs each document alone
    (against the float64 twin): the reference passes, a backend whose mask joins a one-token
    document to the next fails."""
    import importlib
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mutants"))
    try:
        merged = importlib.import_module("m_ctb_one_token_doc_merged").BACKEND
    finally:
        sys.path.pop(0)
    model = build_model(tiny_llama_config(), dtype=torch.bfloat16)
    assert model.twin is not None and model.twin.dtype == torch.float64
    corner = [b for b in packed_batches() if b.name.startswith("corner")]
    route = next(r for r in ROUTES if r.name == "block_causal")
    assert check_route(reference, route, model, "sdpa", batches=corner).equivalent
    found = check_route(merged, route, model, "sdpa", batches=corner).mismatches
    assert found and found[0].row == 0 and found[0].clauses == ("ctb-document-ids",)


def test_a_key_the_route_reads_that_the_backend_leaves_out_is_blamed_on_that_key():
    """A batch without ``cu_seqlens`` cannot be fed to the varlen route: the forward pass fails,
    on the key's clause (a failure on the reference's own keys would be a suite error instead)."""

    def without_cu_seqlens(sample_batch, *args, **kwargs):
        out = reference.convert_text_batch(sample_batch, *args, **kwargs)
        out.pop("cu_seqlens", None)
        return out

    class Backend:
        def __getattr__(self, name):
            return without_cu_seqlens if name == "convert_text_batch" else getattr(reference, name)

    route = next(r for r in ROUTES if r.name == "metadata")
    corner = [b for b in packed_batches() if b.name.startswith("corner")]
    found = check_route(Backend(), route, build_model(tiny_llama_config()), route.implementations[0], batches=corner)
    assert [(m.quantity, m.clauses) for m in found.mismatches] == [("forward pass", ("batched-metadata",))]
    assert "cu_seqlens" in str(found.mismatches[0])
