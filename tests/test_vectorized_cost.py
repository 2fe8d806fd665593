"""The ``vectorized`` backend has no per-document cost: on 8 x 8192 rows, a batch of ~40
documents per row and one of ~200 run exactly the same torch operators, the same number of
times, on every route. Operators are counted with a ``TorchDispatchMode`` (deterministic,
unlike timings, which belong in ``bench/``)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import backends.vectorized as vectorized
from conformance.helpers.inputs import Contract, packed_row, sample_batch

BATCH, LENGTH = 8, 8193  # S = 8192 after the shift


class OperatorCounter(TorchDispatchMode):
    """Counts every aten operator a block of code dispatches."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def counted(call) -> Counter[str]:
    with OperatorCounter() as counter:
        call()
    return counter.calls


def rows_with(documents_per_row: int, seed: int) -> list:
    """``BATCH`` packed rows of ``LENGTH`` tokens, each ~``documents_per_row`` documents of
    random lengths and a random pad tail (as ``pack_flat`` emits them)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(BATCH):
        padding = int(rng.integers(0, 64))
        cuts = np.sort(rng.choice(np.arange(1, LENGTH - padding), size=documents_per_row - 1, replace=False))
        sizes = np.diff(np.concatenate([[0], cuts, [LENGTH - padding]]))
        documents = [rng.integers(1, 50_000, size=int(n)).tolist() for n in sizes]
        rows.append(packed_row(documents, padding))
    return rows


FEW, MANY = rows_with(40, seed=1), rows_with(200, seed=2)

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

    few, many = counted(lambda: convert(FEW)), counted(lambda: convert(MANY))
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
        few, many = counted(lambda f=function: f(few_ids)), counted(lambda f=function: f(many_ids))
        assert few == many, f"{name}: operator calls differ with the document count"

    def thd(document_ids):
        return vectorized.convert_batch_output({"attention_document_ids": document_ids}, "thd")

    assert counted(lambda: thd(few_ids)) == counted(lambda: thd(many_ids))

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

    assert counted(xdoc(few_ids)) == counted(xdoc(many_ids))


def test_the_counter_sees_a_per_document_loop():
    """The check can fail: a loop over documents (one operator per document, as the reference
    has) gives counts that differ between the two batches."""

    def per_document(document_ids):
        for document in range(1, int(document_ids.max()) + 1):
            (document_ids == document).sum()

    few_ids = torch.tensor([[1, 1, 2, 0]])
    many_ids = torch.tensor([[1, 2, 3, 4]])
    assert counted(lambda: per_document(few_ids)) != counted(lambda: per_document(many_ids))
