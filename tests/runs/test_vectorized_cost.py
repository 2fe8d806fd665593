"""The ``vectorized`` backend has no per-document cost: on 8 x 8192 rows, a batch of ~40
documents per row and one of ~200 run exactly the same torch operators, the same number of
times, on every route. Operators are counted with a ``TorchDispatchMode`` (deterministic,
unlike timings, which belong in ``bench/``)."""

from __future__ import annotations

import pytest
import torch

from batchspec.backends import vectorized as vectorized
from batchspec.bench.counting import counted
from batchspec.bench.workloads import sweep_rows
from batchspec.conformance.helpers.sample_batches import Contract, sample_batch


def calls(call):
    """Operator name -> number of calls, for one run of ``call``."""
    return counted(call).calls


# 8 rows of 8192 tokens (after the shift), cut into ~40 and ~200 documents per row.
FEW, MANY = sweep_rows(40, seed=1), sweep_rows(200, seed=2)

ROUTES = {
    "document_ids": dict(contract=Contract(packed_mask_type="document_ids"), output_format="batched"),
    "document_ids+metadata": dict(
        contract=Contract(packed_mask_type="document_ids", return_packed_sequence_metadata=True),
        output_format="batched",
    ),
    "block_causal": dict(contract=Contract(packed_mask_type="block_causal"), output_format="batched"),
    "thd": dict(contract=Contract(), output_format="thd"),
    "xdoc+metadata": dict(
        contract=Contract(packed_mask_type="document_ids", return_packed_sequence_metadata=True),
        output_format="batched",
        xdoc=True,
    ),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_convert_text_batch_runs_the_same_operators_for_40_and_200_documents_per_row(route):
    options = ROUTES[route]

    def convert(rows):
        return vectorized.convert_text_batch(
            sample_batch(rows),
            options["contract"],
            ignore_index=-100,
            mask_segment_starts=True,
            allow_cross_document_attention=options.get("xdoc", False),
            output_format=options["output_format"],
        )

    few, many = calls(lambda: convert(FEW)), calls(lambda: convert(MANY))
    assert few == many, f"{route}: operator calls differ with the document count: {few - many} vs {many - few}"
    # The counts are real work, not an empty block: the shift, a cumsum for document ids.
    assert few["aten.cumsum"] >= 1 and sum(few.values()) > 10
    # The documents per row really differ in the two batches.
    assert convert(FEW)["document_ids"].amax() < 60 < convert(MANY)["document_ids"].amax()


def test_the_metadata_functions_run_the_same_operators_for_40_and_200_documents_per_row():
    def ids(rows):
        return vectorized.convert_text_batch(
            sample_batch(rows), Contract(packed_mask_type="document_ids"), -100, False, False
        )["document_ids"]

    few_ids, many_ids = ids(FEW), ids(MANY)
    for name in ("get_unpad_data", "build_packed_sequence_metadata"):
        function = getattr(vectorized, name)
        few, many = calls(lambda f=function: f(few_ids)), calls(lambda f=function: f(many_ids))
        assert few == many, f"{name}: operator calls differ with the document count"

    def thd(document_ids):
        return vectorized.convert_batch_output({"attention_document_ids": document_ids}, "thd")

    assert calls(lambda: thd(few_ids)) == calls(lambda: thd(many_ids))

    def xdoc(document_ids):
        positions = vectorized.convert_text_batch(
            sample_batch(FEW if document_ids is few_ids else MANY), Contract(), -100, False, False
        )["position_ids"]
        batch = {
            "document_ids": document_ids,
            "attention_document_ids": document_ids.clone(),
            "position_ids": positions,
        }
        return lambda: vectorized.enable_xdoc_attention(batch, Contract())

    assert calls(xdoc(few_ids)) == calls(xdoc(many_ids))


def test_the_counter_sees_a_per_document_loop():
    """The check can fail: a loop over documents (one operator per document, as the reference
    has) gives counts that differ between the two batches."""

    def per_document(document_ids):
        for document in range(1, int(document_ids.max()) + 1):
            (document_ids == document).sum()

    few_ids = torch.tensor([[1, 1, 2, 0]])
    many_ids = torch.tensor([[1, 2, 3, 4]])
    assert calls(lambda: per_document(few_ids)) != calls(lambda: per_document(many_ids))
