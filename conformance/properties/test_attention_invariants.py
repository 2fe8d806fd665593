"""Hypothesis invariants of ``adapt_model_inputs`` and ``enable_xdoc_attention`` (SPEC.md,
"5. ``adapt_model_inputs``", "6. ``enable_xdoc_attention``") on ids beyond what
``convert_text_batch`` builds: any ids, ids at the narrowing edges, negative attention ids,
no input mutation.

Inputs come from ``batchspec.conformance.helpers.strategies``; expected values are computed in
plain Python (``batchspec.conformance.helpers.invariants``) or, for ``enable_xdoc_attention`` on
ids in any order, by ``reference``. The code under test is reached only through the ``backend``
fixture.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec import reference
from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import (
    ClauseFailure,
    assert_raises,
    assert_tensor_equal,
    call_valid,
    clause_failure,
)
from batchspec.conformance.helpers.sample_batches import (
    Contract,
)


def _id_cells(draw) -> st.SearchStrategy[int]:
    """Ids 0..6, or in one draw in four also ids at the narrowing edges (``NARROW_EDGE_IDS``
    and, when ``int16``, ``INT16_EDGE_IDS``), where an id narrowed to int8 or int16 wraps."""
    if draw(st.integers(0, 3), label="edge ids") != 0:
        return st.integers(0, 6)
    return st.one_of(st.integers(0, 6), st.sampled_from(cs.NARROW_EDGE_IDS + cs.INT16_EDGE_IDS))


@st.composite
def _adapt_inputs(draw):
    """Random int64 ``document_ids`` (any ids >= 0, not renumbered; sometimes ids at the
    int8 / int16 edges, ``_id_cells``) and optional eligibility."""
    batch_size = draw(st.integers(1, cs.MAX_BATCH), label="B")
    sequence_length = draw(st.integers(1, cs.MAX_LEN), label="S")
    cell = _id_cells(draw)
    ids = draw(
        st.lists(
            st.lists(cell, min_size=sequence_length, max_size=sequence_length), min_size=batch_size, max_size=batch_size
        ),
        label="document_ids",
    )
    eligible = draw(
        st.none()
        | st.lists(
            st.lists(st.booleans(), min_size=sequence_length, max_size=sequence_length),
            min_size=batch_size,
            max_size=batch_size,
        ),
        label="attention_eligibility",
    )
    return ids, eligible


@pytest.mark.clause("adapt-attention-ids", "adapt-no-mutation")
@pytest.mark.requires("adapt_model_inputs")
@given(data=st.data())
def test_adapt_model_inputs_invariants(backend, data):
    ids, eligible = data.draw(_adapt_inputs(), label="inputs")
    call = f"adapt_model_inputs({{'document_ids': torch.tensor({ids}), ...}}, attention_eligibility={eligible})"
    document_ids = torch.tensor(ids, dtype=torch.int64)
    batch = {
        "document_ids": document_ids,
        "input_ids": torch.arange(document_ids.numel(), dtype=torch.int64).reshape(document_ids.shape),
        "padding_mask": document_ids == 0,
    }
    eligibility = None if eligible is None else torch.tensor(eligible, dtype=torch.bool)
    entries = dict(batch)
    clones = {key: value.clone() for key, value in batch.items()}
    eligibility_clone = None if eligibility is None else eligibility.clone()

    result = (
        backend.adapt_model_inputs(batch, eligibility) if eligibility is not None else backend.adapt_model_inputs(batch)
    )

    if result is not batch:
        raise clause_failure(
            f"returned {type(result).__name__} id {id(result)}, but should return the same mapping",
            clause="adapt-attention-ids",
            call=call,
        )
    expected = [
        [ids[b][i] if eligible is None or eligible[b][i] else 0 for i in range(len(ids[b]))] for b in range(len(ids))
    ]
    assert_tensor_equal(
        "attention_document_ids",
        result.get("attention_document_ids"),
        torch.tensor(expected, dtype=torch.int64),
        clause="adapt-attention-ids",
        call=call,
    )
    if result["attention_document_ids"].untyped_storage().data_ptr() == document_ids.untyped_storage().data_ptr():
        raise clause_failure(
            "attention_document_ids shares storage with document_ids, but should be new",
            clause="adapt-attention-ids",
            call=call,
        )

    # Only an entry is added; every tensor that was there is the same object, unmodified.
    if sorted(result) != sorted([*entries, "attention_document_ids"]):
        raise clause_failure(
            f"keys {sorted(result)}, but should be {sorted([*entries, 'attention_document_ids'])}",
            clause="adapt-no-mutation",
            call=call,
        )
    for key, value in entries.items():
        if result[key] is not value:
            raise clause_failure(
                f"batch[{key!r}] was replaced, but should be the same tensor",
                clause="adapt-no-mutation",
                call=call,
            )
        assert_tensor_equal(
            f"batch[{key!r}] (after the call)", value, clones[key], clause="adapt-no-mutation", call=call
        )
    if eligibility is not None:
        assert_tensor_equal(
            "attention_eligibility (after the call)",
            eligibility,
            eligibility_clone,
            clause="adapt-no-mutation",
            call=call,
        )


@st.composite
def _xdoc_inputs(draw):
    """An ``enable_xdoc_attention`` batch beyond what ``convert_text_batch`` builds: int64
    ``document_ids`` >= 0 in any order along the row (decreasing, reappearing, gapped ids),
    ``attention_document_ids`` that are the document ids, 0 (a processor exclusion) or negative,
    and positions >= 0, text ``[B, S]`` or mRoPE ``[3, B, S]``. In one batch in eight (then
    B <= 2) ids also take the int8 edges ``NARROW_EDGE_IDS`` (127 | 128, 255 | 256; the
    reference walks every id 1..max of a row, so never the int16 ones)."""
    edges = draw(st.integers(0, 7), label="edge ids") == 0
    batch_size = draw(st.integers(1, 2 if edges else cs.MAX_BATCH), label="B")
    sequence_length = draw(st.integers(1, cs.MAX_LEN), label="S")

    def grid(cell):
        row = st.lists(cell, min_size=sequence_length, max_size=sequence_length)
        return st.lists(row, min_size=batch_size, max_size=batch_size)

    cell = st.one_of(st.integers(0, 6), st.sampled_from(cs.NARROW_EDGE_IDS)) if edges else st.integers(0, 6)
    ids = draw(grid(cell), label="document_ids")
    kinds = draw(grid(st.sampled_from(("same", "same", "same", "zero", "negative"))), label="attention")
    attention = [
        [i if k == "same" else 0 if k == "zero" else -1 - i for i, k in zip(id_row, kind_row)]
        for id_row, kind_row in zip(ids, kinds)
    ]
    axes = draw(st.sampled_from((None, 3)), label="axes")
    shape = (batch_size, sequence_length) if axes is None else (axes, batch_size, sequence_length)
    positions = draw(
        st.lists(st.integers(0, 12), min_size=torch.Size(shape).numel(), max_size=torch.Size(shape).numel()),
        label="positions",
    )
    return ids, attention, positions, shape


@pytest.mark.clause("xdoc-attention-ids", "xdoc-positions", "xdoc-untouched", "xdoc-contract")
@pytest.mark.requires("xdoc")
@given(data=st.data())
def test_enable_xdoc_attention_matches_reference_on_any_ids(backend, data):
    """On ids in any order and with negative attention ids (SPEC defines both), the backend's
    ``enable_xdoc_attention`` gives the reference's attention ids [xdoc-attention-ids] and
    positions [xdoc-positions], and leaves every other field, and every input tensor, as it was
    [xdoc-untouched]. The contract has no bound, or a ``max_sequence_length`` at the edge of the
    largest translated position P (of the reference's positions, at tokens with
    ``document_ids > 0``, any axis): P itself raises ``ValueError`` naming it and P, P + 1 passes
    [xdoc-contract]."""
    ids, attention, positions, shape = data.draw(_xdoc_inputs(), label="inputs")
    call = (
        f"enable_xdoc_attention({{'document_ids': torch.tensor({ids}), 'attention_document_ids': "
        f"torch.tensor({attention}), 'position_ids': torch.tensor({positions}).reshape{shape}, ...}}, Contract())"
    )

    def batch():
        document_ids = torch.tensor(ids, dtype=torch.int64)
        return {
            "input_ids": torch.arange(document_ids.numel(), dtype=torch.int64).reshape(document_ids.shape),
            "labels": torch.full(document_ids.shape, -100, dtype=torch.int64),
            "padding_mask": document_ids == 0,
            "document_ids": document_ids,
            "attention_document_ids": torch.tensor(attention, dtype=torch.int64),
            "position_ids": torch.tensor(positions, dtype=torch.int64).reshape(shape),
        }

    given = batch()
    inputs = dict(given)
    clones = {key: value.clone() for key, value in given.items()}
    expected = reference.enable_xdoc_attention(batch(), Contract())
    translated = expected["position_ids"]
    translated = (translated if translated.ndim == 3 else translated[None])[:, torch.tensor(ids) > 0]
    largest = int(translated.max()) if translated.numel() else 0
    bound = data.draw(st.sampled_from((None, largest, largest + 1)) if largest >= 1 else st.none(), label="bound")
    if bound is not None and bound <= largest:
        try:
            assert_raises(
                ValueError,
                ("max_sequence_length", bound),
                backend.enable_xdoc_attention,
                given,
                Contract(max_sequence_length=bound),
                clause="xdoc-contract",
            )
        except ClauseFailure as failure:
            raise ClauseFailure(f"{failure} on {call} with max_sequence_length={bound}", failure.clauses) from failure
        return
    call = call if bound is None else f"{call[: -len('Contract())')]}Contract(max_sequence_length={bound}))"
    out = call_valid(
        backend.enable_xdoc_attention, given, Contract(max_sequence_length=bound), clause="xdoc-contract", call=call
    )
    for key, clause in (("attention_document_ids", "xdoc-attention-ids"), ("position_ids", "xdoc-positions")):
        assert_tensor_equal(key, out.get(key), expected[key], clause=clause, call=call)
    for key in ("input_ids", "labels", "padding_mask", "document_ids"):
        assert_tensor_equal(key, out.get(key), clones[key], clause="xdoc-untouched", call=call)
    for key, value in inputs.items():
        assert_tensor_equal(
            f"input {key} (after the call)",
            value,
            clones[key],
            clause="xdoc-untouched",
            call=f"{call}: modified in place",
        )
