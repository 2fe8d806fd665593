"""``adapt_model_inputs`` on live mappings (SPEC.md, "``adapt_model_inputs``"): the mapping it
returns is the one it was given, and the new attention ids are a tensor of their own. Its
values and errors are golden cases of ``golden/cases/attention.py`` (a golden run also reports
any input tensor modified in place)."""

from __future__ import annotations

import pytest

from batchspec.conformance.golden.case_values import stored_inputs
from batchspec.conformance.helpers.asserts import assert_tensor_equal, check


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("adapt-attention-ids", "tb-no-aliasing")
def test_without_eligibility_returns_the_mapping_with_ids_of_their_own(backend):
    """Without eligibility: the same mapping is returned, and writing to its new
    attention_document_ids leaves document_ids as they were."""
    batch = stored_inputs("test_adapt_copies_document_ids")["batch"]
    document_ids = batch["document_ids"]
    before = document_ids.clone()
    out = backend.adapt_model_inputs(batch)
    check(
        out is batch,
        "adapt_model_inputs must return the same mapping object",
        clause="adapt-attention-ids",
    )
    out["attention_document_ids"].fill_(9)  # the call is done: a change now is shared storage, not a mutation
    assert_tensor_equal(
        "document_ids (after writing to the returned attention_document_ids)",
        document_ids,
        before,
        clause="adapt-attention-ids, tb-no-aliasing",
        call="attention_document_ids must be a new tensor",
    )
