"""Dtype corners of the tensor inputs SPEC admits, beyond the int64 / int32 / bool the other
checks draw (SPEC.md sections 3, 5, 6, 8; the masks of section 2: test_metadata.py).

* ``convert_text_batch`` payloads: a token field or ``positions`` of any integer dtype (torch
  int8 .. int64 and uint8, numpy int8 .. uint64, each field its own, as far as its values fit)
  gives the batch ``check_converted_batch`` expects ([tb-dtypes]: "whatever the dtype of the
  payload").
* ``default_collater``: tensor fields of narrow or mixed integer dtypes are concatenated with
  torch's promotion [dcoll-fields]; a bool or uint8 ``attention_mask`` gives ``padding_mask``
  where it is 0 [dcoll-padding-mask].
* ``adapt_model_inputs`` and ``enable_xdoc_attention`` admit int64 ids and positions and a bool
  eligibility only: any other integer dtype (uint8, int8, int16, int32; bool ids) raises the
  ``TypeError`` naming the field that [adapt-errors] items 2 and 4 and [xdoc-errors] item 2
  require (the golden cases hold int32; a legacy uint8 "byte" eligibility mask is the
  realistic one here).

An exception on a valid input of an admitted dtype is blamed on the function's error clause
(SPEC.md, "Conformance", "Raising on a valid input"): [ctb-input-errors], [dcoll-fields].

``Datum`` / ``collate_datums`` draw narrow ``input_ids`` / ``target_tokens`` and bool weights in
``conformance/helpers/datums.py``'s ``datum_cases``, whose expected values live there.
``convert_batch_output`` is not drawn: SPEC gives its ids no dtype beyond "the selected ids" (int64).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.golden.case_values import stored_inputs
from batchspec.conformance.golden.key_blame import OUTPUT_CLAUSES
from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import assert_raises, assert_tensor_equal, call_valid
from batchspec.conformance.helpers.invariants import CONVERTED_BATCH_CLAUSES, check_converted_batch
from batchspec.conformance.helpers.sample_batches import Contract, sample_batch

TORCH_PAYLOAD_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
NUMPY_PAYLOAD_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
# integer dtypes SPEC does not admit where only int64 ids / positions (or a bool eligibility) are
OTHER_ID_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.bool)
OTHER_ELIGIBILITY_DTYPES = (torch.uint8, torch.int8, torch.int32, torch.int64)


# --- convert_text_batch: payload fields of any integer dtype ------------------------------------


def fitting(values: Sequence[int], dtypes: Sequence[Any]) -> list[Any]:
    """The dtypes of ``dtypes`` (torch or numpy) that hold every value of ``values``."""
    low, high = min(values), max(values)
    out = []
    for dtype in dtypes:
        info = torch.iinfo(dtype) if isinstance(dtype, torch.dtype) else np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            out.append(dtype)
    return out


def _dtype_name(dtype: Any) -> str:
    return str(dtype) if isinstance(dtype, torch.dtype) else f"np.{np.dtype(dtype).name}"


@pytest.mark.clause(*CONVERTED_BATCH_CLAUSES)
@pytest.mark.requires("convert_text_batch")
@given(data=st.data())
def test_convert_text_batch_on_payload_fields_of_any_integer_dtype(backend, data):
    """Each record's token field and ``positions`` as a torch tensor or numpy array of a drawn
    integer dtype that holds its values (records and fields may differ: the batch mixes them)."""
    case = data.draw(cs.packed_batches(), label="case")
    contract = cs.usable_contract(case.contract, backend)
    batch = sample_batch(case.rows)
    shown = []
    for index, record in enumerate(batch.records):
        for key in ("input_ids", "positions"):  # sample_batch's token field, and positions
            if key not in record.payload:
                continue
            values = [int(v) for v in record.payload[key]]
            form = data.draw(st.sampled_from(("torch", "numpy")), label=f"form[{index}].{key}")
            candidates = fitting(values, TORCH_PAYLOAD_DTYPES if form == "torch" else NUMPY_PAYLOAD_DTYPES)
            dtype = data.draw(st.sampled_from(candidates), label=f"dtype[{index}].{key}")
            array = np.asarray(values, dtype=np.int64)
            record.payload[key] = torch.from_numpy(array).to(dtype) if form == "torch" else array.astype(dtype)
            shown.append(f"records[{index}].{key} as {_dtype_name(dtype)}")
    call = (
        cs.describe_call(
            case.rows,
            contract,
            ignore_index=case.ignore_index,
            mask_segment_starts=case.mask_segment_starts,
            xdoc=False,
        )
        + f" with {', '.join(shown)}"
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


# --- default_collater: tensor fields of narrow and mixed dtypes ---------------------------------

ID_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
MASK_DTYPES = (torch.bool, torch.uint8, torch.int32, torch.int64)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields", "dcoll-padding-mask")
@given(data=st.data())
def test_default_collater_on_tensor_fields_of_narrow_and_mixed_dtypes(backend, data):
    """Items of ``[1, N]`` (or ``[N]``) tensor ``input_ids``, each of its own drawn integer dtype,
    and sometimes an ``attention_mask`` tensor, bool or integer, each of its own dtype: the
    output concatenates them with torch's type promotion [dcoll-fields]; ``padding_mask`` is
    ``attention_mask == 0``, else ``input_ids == 0`` (the default pad) [dcoll-padding-mask]."""
    count = data.draw(st.integers(1, 4), label="items")
    width = data.draw(st.integers(1, 6), label="N")
    with_mask = data.draw(st.booleans(), label="attention_mask")
    two_d = data.draw(st.booleans(), label="two_d")
    rows = {"input_ids": [], "attention_mask": []}
    dtypes = {"input_ids": [], "attention_mask": []}
    batch = []
    for _ in range(count):
        item = {}
        ids = data.draw(st.lists(st.integers(0, 9), min_size=width, max_size=width), label="input_ids")
        keys = [("input_ids", ids, ID_DTYPES)]
        if with_mask:
            keys.append(
                (
                    "attention_mask",
                    data.draw(st.lists(st.sampled_from((0, 1, 1)), min_size=width, max_size=width)),
                    MASK_DTYPES,
                )
            )
        for key, values, choices in keys:
            dtype = data.draw(st.sampled_from(choices), label=f"{key} dtype")
            tensor = torch.tensor(values, dtype=torch.int64).to(dtype)
            item[key] = tensor[None] if two_d else tensor
            rows[key].append(values)
            dtypes[key].append(dtype)
        batch.append(item)
    call = (
        "default_collater(["
        + ", ".join(
            "{" + ", ".join(f"{k!r}: torch.tensor({v.tolist()}, dtype={v.dtype})" for k, v in item.items()) + "}"
            for item in batch
        )
        + "])"
    )
    out = call_valid(backend.default_collater, batch, clause="dcoll-fields", call=call)
    want = {}
    for key in ("input_ids", "attention_mask") if with_mask else ("input_ids",):
        dtype = dtypes[key][0]
        for other in dtypes[key][1:]:
            dtype = torch.promote_types(dtype, other)  # "mixed dtypes promote as torch.cat does"
        want[key] = torch.tensor(rows[key], dtype=torch.int64).to(dtype)
    padding = rows["attention_mask"] if with_mask else rows["input_ids"]
    want["padding_mask"] = torch.tensor([[v == 0 for v in row] for row in padding], dtype=torch.bool)
    for key, value in want.items():
        got = out.get(key) if isinstance(out, Mapping) else None
        clause = ", ".join(OUTPUT_CLAUSES["default_collater"].get(key, ("dcoll-fields",)))
        assert_tensor_equal(key, got, value, clause=clause, call=call)


# --- adapt_model_inputs, enable_xdoc_attention: int64 ids and bool eligibility only -------------


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("adapt-errors.2")
def test_adapt_model_inputs_rejects_document_ids_of_another_dtype(backend):
    """uint8, int8, int16, int32 and bool ``document_ids`` (the values of golden case
    test_adapt_with_eligibility) each raise TypeError naming ``document_ids``."""
    batch = stored_inputs("test_adapt_with_eligibility")["batch"]
    for dtype in OTHER_ID_DTYPES:
        given = {**batch, "document_ids": batch["document_ids"].to(dtype)}
        assert_raises(TypeError, ("document_ids",), backend.adapt_model_inputs, given, clause="adapt-errors.2")


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("adapt-errors.4")
def test_adapt_model_inputs_rejects_an_integer_eligibility(backend):
    """A uint8 (legacy byte mask), int8, int32 or int64 ``attention_eligibility`` of 0/1 values
    raises TypeError naming ``attention_eligibility`` (golden case test_adapt_with_eligibility's
    inputs)."""
    inputs = stored_inputs("test_adapt_with_eligibility")
    for dtype in OTHER_ELIGIBILITY_DTYPES:
        eligibility = inputs["attention_eligibility"].to(dtype)
        assert_raises(
            TypeError,
            ("attention_eligibility",),
            backend.adapt_model_inputs,
            dict(inputs["batch"]),
            eligibility,
            clause="adapt-errors.4",
        )


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-errors.2")
def test_enable_xdoc_attention_rejects_ids_and_positions_of_another_dtype(backend):
    """Each of ``document_ids``, ``attention_document_ids`` and ``position_ids`` as uint8, int8,
    int16, int32 or bool (the rest of golden case test_xdoc_bound_not_reached's batch int64)
    raises TypeError naming that field."""
    batch = stored_inputs("test_xdoc_bound_not_reached")["batch"]
    for field in ("document_ids", "attention_document_ids", "position_ids"):
        for dtype in OTHER_ID_DTYPES:
            given = {**batch, field: batch[field].to(dtype)}
            assert_raises(TypeError, (field,), backend.enable_xdoc_attention, given, Contract(), clause="xdoc-errors.2")
