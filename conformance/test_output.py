"""``convert_batch_output`` on live mappings (SPEC.md, "Output formats"): it returns the mapping
it was given. Its values (THD lengths, the -1000 fill, the errors) and the exact key sets of
each ``convert_text_batch`` route are golden cases (``golden/cases/output.py``,
``golden/cases/convert.py``)."""

from __future__ import annotations

import pytest

from batchspec.conformance.golden.case_values import stored_inputs
from batchspec.conformance.helpers.asserts import check


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("batched-unchanged")
def test_convert_batch_output_batched_is_identity(backend):
    """ "batched" returns the same mapping with the same tensors."""
    batch = stored_inputs("test_output_batched_unchanged")["batch"]
    tensors = dict(batch)
    out = backend.convert_batch_output(batch, "batched")
    check(
        out is batch and set(out) == set(tensors) and all(out[k] is v for k, v in tensors.items()),
        f"convert_batch_output(batch, 'batched') changed the mapping to keys {sorted(out)}",
        clause="batched-unchanged",
    )


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("thd-lengths")
def test_convert_batch_output_thd_returns_the_same_mapping(backend):
    """ "thd" adds its keys to the mapping it was given and returns that mapping."""
    batch = stored_inputs("test_output_thd_runs_in_stream_order")["batch"]
    out = backend.convert_batch_output(batch, "thd")
    check(
        out is batch,
        "convert_batch_output(batch, 'thd') must return the same mapping",
        clause="thd-lengths",
    )
