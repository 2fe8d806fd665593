"""Hypothesis properties of ``convert_text_batch`` at three input edges (SPEC.md, "4.
``convert_text_batch``" and "6. ``enable_xdoc_attention``"), each a class a single-bug backend
got past the other checks with (issue 31, "Blind spots"):

* a fault in the first or the last column of a row, for every rule [ctb-input-errors] checks per
  element (items 4, 6 and 10), not only inside the row;
* numpy unsigned arrays as payload fields: uint64 values beyond int64 are rejected (item 6) and
  values at each unsigned dtype's edge, up to int64's largest, are converted as they are;
* ``max_sequence_length`` exactly at the largest translated position under xdoc (it raises,
  [xdoc-contract]) and one past it (it passes);
* rows longer than one GPU block (issue 33): S one past a block, a document or the pad tail
  starting exactly at a block edge, converted with the metadata.

Inputs come from ``batchspec.conformance.helpers.strategies`` (``element_faults``,
``unsigned_edge_batches``, ``xdoc_bounds``, ``block_batches``); expected values are SPEC's (the error a clause
item requires, ``check_converted_batch``), never the reference's. The code under test is reached
only through the ``backend`` fixture.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import ClauseFailure, assert_raises, call_valid
from batchspec.conformance.helpers.invariants import CONVERTED_BATCH_CLAUSES, check_converted_batch
from batchspec.conformance.helpers.sample_batches import Row, sample_batch, unpacked_row


def _raises(error_type, facts, function, *args, clause: str, call: str) -> None:
    """``assert_raises`` on ``function(*args)``, its failure naming the drawn call."""
    __tracebackhide__ = True
    try:
        assert_raises(error_type, facts, function, *args, clause=clause)
    except ClauseFailure as failure:
        raise ClauseFailure(f"{failure} on {call}", failure.clauses) from failure


@pytest.mark.clause("ctb-input-errors", "ctb-input-errors.4", "ctb-input-errors.6", "ctb-input-errors.10")
@pytest.mark.requires("convert_text_batch")
@given(data=st.data())
def test_convert_text_batch_rejects_an_element_fault_in_any_column(backend, data):
    """One element of one record's token field or ``positions`` breaks a per-element rule, in the
    first or last column most often (``element_faults``: a float, item 4; a value beyond int64 in
    a list or a numpy uint64 array, item 6; a negative position, item 10), on any route the
    backend declares: the error the item requires, naming the record and the field."""
    fault = data.draw(cs.element_faults(), label="fault")
    route = cs.draw_route(data, backend, fault.case)
    batch = sample_batch(fault.case.rows)
    batch.records[fault.record].payload[fault.field] = fault.payload_value()
    call = f"{cs.describe_route_call(fault.case, route)} with {fault.describe()}"
    _raises(
        fault.error,
        (fault.record, fault.field),
        backend.convert_text_batch,
        batch,
        *cs.call_arguments(fault.case, route),
        clause=f"ctb-input-errors.{fault.item}",
        call=call,
    )


@pytest.mark.clause(*CONVERTED_BATCH_CLAUSES, "ctb-input-errors.6")
@pytest.mark.requires("convert_text_batch")
@given(data=st.data())
def test_convert_text_batch_on_unsigned_arrays_at_their_edges(backend, data):
    """Token fields and ``positions`` as numpy uint8 .. uint64 arrays holding their dtype's
    largest value (uint64: int64's largest, 2**63 - 1) in the first, last or another column
    (``unsigned_edge_batches``): valid inputs (item 6 allows every int64 value; [tb-dtypes]
    any payload dtype), converted to the batch ``check_converted_batch`` expects."""
    drawn = data.draw(cs.unsigned_edge_batches(), label="batch")
    case = drawn.case
    contract = cs.usable_contract(case.contract, backend)
    # sample_batch writes positions as int32 (pack_flat's dtype): build it on positions of the same
    # zeros (its packing tags count them), then give every field its drawn unsigned array
    stand_in = [
        Row(r.tokens, None if r.positions is None else tuple(min(p, 1) for p in r.positions), r.padding_length)
        for r in case.rows
    ]
    batch = sample_batch(stand_in)
    for (index, field), dtype in drawn.dtypes.items():
        row = case.rows[index]
        batch.records[index].payload[field] = np.asarray(
            row.tokens if field == "input_ids" else row.positions, dtype=dtype
        )
    call = (
        cs.describe_call(
            case.rows,
            contract,
            ignore_index=case.ignore_index,
            mask_segment_starts=case.mask_segment_starts,
            xdoc=False,
        )
        + f" with {drawn.describe()}"
    )
    out = call_valid(
        backend.convert_text_batch,
        batch,
        contract,
        case.ignore_index,
        case.mask_segment_starts,
        False,
        clause="ctb-input-errors",
        call=call,
    )
    check_converted_batch(
        out,
        case.rows,
        ignore_index=case.ignore_index,
        mask_segment_starts=case.mask_segment_starts,
        contract=contract,
        call=call,
    )


@pytest.mark.clause("xdoc-contract", "ctb-xdoc")
@pytest.mark.requires("convert_text_batch", "xdoc")
@given(data=st.data())
def test_convert_text_batch_xdoc_bound_at_the_largest_translated_position(backend, data):
    """Under xdoc, on any route the backend declares, a contract whose ``max_sequence_length``
    is exactly the largest translated position P of the batch raises ``ValueError`` naming
    ``max_sequence_length`` and its value (P is also the position that reaches it), and one of
    P + 1 converts (``xdoc_bounds``; P from SPEC's [xdoc-positions], the pad tail unbounded)."""
    case = data.draw(cs.packed_batches(), label="case")
    route = cs.draw_route(data, backend, case, xdoc=True)
    rows = case.rows
    if route.pad_to_length is not None:  # the appended pads make the last real token an input
        rows = [unpacked_row(row, route.pad_to_length, route.pad_token_id) for row in rows]
    bound, rejected = data.draw(cs.xdoc_bounds(rows), label="bound")
    contract = SimpleNamespace(
        packed_mask_type=route.contract.packed_mask_type,
        return_packed_sequence_metadata=route.contract.return_packed_sequence_metadata,
        max_sequence_length=bound,
    )
    route = route._replace(contract=contract)
    call = cs.describe_route_call(case, route)
    args = (sample_batch(case.rows), *cs.call_arguments(case, route))
    if rejected:
        _raises(
            ValueError,
            ("max_sequence_length", bound),
            backend.convert_text_batch,
            *args,
            clause="xdoc-contract",
            call=call,
        )
    else:
        call_valid(backend.convert_text_batch, *args, clause="xdoc-contract", call=call)


@pytest.mark.clause(*CONVERTED_BATCH_CLAUSES)
@pytest.mark.requires("convert_text_batch")
@given(data=st.data())
def test_convert_text_batch_past_one_gpu_block(backend, data):
    """Rows a kernel covers with more than one block (``block_batches``: S one past a block of
    ``GPU_BLOCKS``, 1025 most often, a document or the pad tail starting exactly at a block
    edge, input column 1024 most often), converted with the metadata when the backend declares
    ``packed_metadata`` (either mask type): every field, ``cu_seqlens`` and ``max_seqlen``
    included, is ``check_converted_batch``'s."""
    case = data.draw(cs.block_batches(), label="case")
    contract = cs.usable_contract(case.contract, backend)
    call = cs.describe_call(
        cs.describe_long_rows(case.rows),
        contract,
        ignore_index=case.ignore_index,
        mask_segment_starts=case.mask_segment_starts,
        xdoc=False,
    )
    out = call_valid(
        backend.convert_text_batch,
        sample_batch(case.rows),
        contract,
        case.ignore_index,
        case.mask_segment_starts,
        False,
        clause="ctb-input-errors",
        call=call,
    )
    check_converted_batch(
        out,
        case.rows,
        ignore_index=case.ignore_index,
        mask_segment_starts=case.mask_segment_starts,
        contract=contract,
        call=call,
    )
