"""[tb-layout]: every function of the contract reads its tensor inputs by their values, whatever
their memory layout (SPEC.md, "``TrainingBatch`` fields").

Each check draws a valid input, calls the backend on it as the suite builds it (contiguous, at
storage offset 0) and on a copy whose tensors (and numpy payload arrays) are stored
otherwise (``batchspec.conformance.helpers.layouts``: transposed, sliced with a step, expanded
with a stride of 0, at a storage offset, channels-last; each tensor laid out or kept, at least
one laid out), and asserts that the two calls behave alike: the outputs equal key by key
(tensors exactly, dtype included), and the non-contiguous input unchanged. That relation is
exactly [tb-layout], so a difference, or any exception raised on the non-contiguous input
only, fails on [tb-layout] alone.

What the contiguous call does on its own is other checks' business: when it raises on a valid
input, the example asserts nothing here (the clauses defining that input's output blame it);
when a check deliberately draws inputs SPEC lets the function reject (an all-zero mask, THD
ids with an interior zero, a ``max_sequence_length`` bound, a packed empty datum), an error of
the listed type on the contiguous copy must be raised, with the same type, on the
non-contiguous one too ("the errors its contiguous copy gives"). Likewise a function that
modifies its contiguous input too is left to the no-mutation clauses; only a modification of
the non-contiguous input alone is [tb-layout]'s.

With ``--device``, the inputs are laid out on that device and the backend's function is called
directly: the suite's device wrapper copies its inputs, which would make them contiguous.

Here: the metadata functions, ``convert_text_batch``, ``adapt_model_inputs``,
``enable_xdoc_attention`` and ``convert_batch_output``; ``Datum`` and the collaters:
test_layouts_collaters.py; the relation's code: ``conformance/helpers/layout_relation.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.layout_relation import (
    compare,
    describe_inputs,
    draw_grid,
    lay_out,
    tensor_function,
)
from batchspec.conformance.helpers.sample_batches import Contract, Row, payload_form, sample_batch, with_token_field

# --- get_unpad_data / build_packed_sequence_metadata -------------------------------------------


@st.composite
def masks(draw) -> tuple[torch.Tensor, tuple[type[BaseException], ...]]:
    """An ``id_masks`` mask, sometimes with every row equal to one of its nonempty rows (a stride
    of 0 along the batch then keeps its values), sometimes all zero (SPEC requires a
    ``ValueError``: [unpad-errors], [meta-errors]); and the errors SPEC lets it raise."""
    mask = draw(cs.id_masks(), label="mask")
    form = draw(st.sampled_from(("drawn",) * 6 + ("equal_rows", "equal_rows", "all_zero")), label="form")
    if form == "equal_rows":
        row = next(r for r in mask if bool(r.bool().any()))
        mask = row[None].repeat(mask.shape[0], 1)
    if form == "all_zero":
        return torch.zeros_like(mask), (ValueError,)
    return mask, ()


# function -> (its profile, the names of its tuple output's items, or None for a mapping)
MASK_FUNCTIONS = {
    "get_unpad_data": ("unpad_data", ("indices", "cu_seqlens", "max_seqlen")),
    "build_packed_sequence_metadata": ("packed_metadata", None),
}


@pytest.mark.clause("tb-layout")
@pytest.mark.parametrize(
    "function",
    [pytest.param(name, marks=pytest.mark.requires(profile)) for name, (profile, _) in MASK_FUNCTIONS.items()],
)
@given(data=st.data())
def test_metadata_functions_read_a_mask_in_any_layout(backend, function, data):
    mask, errors = data.draw(masks(), label="mask")
    contiguous, laid = lay_out(data, {"attention_mask": mask}, backend.device)
    call = f"{function}(attention_mask) with {describe_inputs(laid)}, against its contiguous copy"
    compare(
        tensor_function(backend, function),
        (contiguous["attention_mask"],),
        (laid["attention_mask"],),
        contiguous,
        laid,
        call=call,
        errors=errors,
        names=MASK_FUNCTIONS[function][1],
    )


# --- convert_text_batch: payload fields -------------------------------------------------------


def constant_row(row: Row) -> Row:
    """``row`` with one token value everywhere and every position 0 (one-token subdocuments): a
    valid row whose token field and ``positions`` a stride of 0 can hold."""
    return Row((row.tokens[0],) * len(row.tokens), (0,) * len(row.tokens), row.padding_length)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("tb-layout")
@given(data=st.data())
def test_convert_text_batch_reads_payload_fields_in_any_layout(backend, data):
    """Token fields and ``positions`` as torch tensors or numpy arrays (sometimes constant, so a
    stride of 0 holds them), on every route the backend declares (``draw_route``)."""
    case = data.draw(cs.packed_batches(), label="case")
    constant = data.draw(st.lists(st.booleans(), min_size=len(case.rows), max_size=len(case.rows)), label="constant")
    rows = [constant_row(row) if flat else row for row, flat in zip(case.rows, constant)]
    case = case._replace(rows=rows)
    route = cs.draw_route(data, backend, case)
    form = data.draw(st.sampled_from(("tensor", "numpy")), label="payload_form")
    field, decoys = cs.draw_token_fields(data)
    given_batch, laid_batch = (payload_form(with_token_field(sample_batch(rows), field, decoys), form) for _ in "ab")
    slots = [
        (b, key)
        for b, record in enumerate(given_batch.records)
        for key in (field, "positions")
        if key in record.payload
    ]
    device = backend.device if form == "tensor" else "cpu"
    contiguous, laid = lay_out(
        data, {f"records[{b}].{key}": given_batch.records[b].payload[key] for b, key in slots}, device
    )
    for b, key in slots:
        given_batch.records[b].payload[key] = contiguous[f"records[{b}].{key}"]
        laid_batch.records[b].payload[key] = laid[f"records[{b}].{key}"]
    options = cs.call_arguments(case, route)
    described = cs.describe_route_call(case, route, rows)
    call = (
        f"{described} with payloads as {form}, the tokens under {field!r}, decoys {list(decoys)}; "
        f"{describe_inputs(laid)}; against the contiguous payloads"
    )
    compare(
        tensor_function(backend, "convert_text_batch"),
        (given_batch, *options),
        (laid_batch, *options),
        contiguous,
        laid,
        call=call,
    )


# --- adapt_model_inputs, enable_xdoc_attention, convert_batch_output: a batch's fields --------


def draw_ids(data) -> torch.Tensor:
    """int64 ``[B, S]`` row-local ids (``id_masks``), sometimes every row equal to the first."""
    ids = data.draw(cs.id_masks(), label="ids").to(torch.int64)
    if data.draw(st.booleans(), label="equal_rows"):
        ids = ids[:1].repeat(ids.shape[0], 1)
    return ids


def text_fields(ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """``input_ids``, ``labels`` and ``padding_mask`` fields beside ``ids`` (rows equal where the
    ids' rows are)."""
    return {"input_ids": ids * 3 + 1, "labels": ids * 5 - 2, "padding_mask": ids == 0}


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("tb-layout")
@given(data=st.data())
def test_adapt_model_inputs_reads_fields_and_eligibility_in_any_layout(backend, data):
    ids = draw_ids(data)
    tensors = {"document_ids": ids, **text_fields(ids)}
    if data.draw(st.booleans(), label="with_eligibility"):
        eligible = torch.tensor(draw_grid(data, tuple(ids.shape), st.booleans(), "eligible")).reshape(ids.shape)
        if data.draw(st.booleans(), label="equal_eligibility_rows"):
            eligible = eligible[:1].repeat(ids.shape[0], 1)
        tensors["attention_eligibility"] = eligible
    contiguous, laid = lay_out(data, tensors, backend.device)

    def arguments(fields: Mapping[str, Any]) -> tuple:
        batch = {key: value for key, value in fields.items() if key != "attention_eligibility"}
        return (batch, fields["attention_eligibility"]) if "attention_eligibility" in fields else (batch,)

    call = f"adapt_model_inputs(batch, attention_eligibility) with {describe_inputs(laid)}, against contiguous copies"
    compare(
        tensor_function(backend, "adapt_model_inputs"),
        arguments(contiguous),
        arguments(laid),
        contiguous,
        laid,
        call=call,
    )


@pytest.mark.requires("xdoc")
@pytest.mark.clause("tb-layout")
@given(data=st.data())
def test_enable_xdoc_attention_reads_fields_in_any_layout(backend, data):
    """Ids in any order, processor exclusions, text ``[B, S]`` or mRoPE ``[3, B, S]`` positions
    (sometimes equal on every axis, as text tokens' are), and sometimes a
    ``max_sequence_length`` that a translated position may reach ([xdoc-contract]'s ValueError)."""
    ids = draw_ids(data)
    shape = tuple(ids.shape)
    keep = torch.tensor(draw_grid(data, shape, st.sampled_from((True, True, True, False)), "eligible")).reshape(shape)
    positions = torch.tensor(draw_grid(data, shape, st.integers(0, 12), "positions"), dtype=torch.int64).reshape(shape)
    axes = data.draw(st.sampled_from(("text", "mrope", "mrope_text")), label="positions_form")
    if axes == "mrope":
        positions = torch.tensor(draw_grid(data, (3, *shape), st.integers(0, 12), "mrope"), dtype=torch.int64).reshape(
            3, *shape
        )
    elif axes == "mrope_text":
        positions = positions[None].repeat(3, 1, 1)
    tensors = {
        "document_ids": ids,
        "attention_document_ids": torch.where(keep, ids, 0),
        "position_ids": positions,
        **text_fields(ids),
    }
    bound = data.draw(st.none() | st.integers(1, 2 * cs.MAX_LEN), label="max_sequence_length")
    contract = Contract(max_sequence_length=bound)
    contiguous, laid = lay_out(data, tensors, backend.device)
    call = f"enable_xdoc_attention(batch, {contract!r}) with {describe_inputs(laid)}, against contiguous copies"
    compare(
        tensor_function(backend, "enable_xdoc_attention"),
        (dict(contiguous), contract),
        (dict(laid), contract),
        contiguous,
        laid,
        call=call,
        errors=(ValueError,) if bound is not None else (),
    )


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("tb-layout")
@given(data=st.data())
def test_convert_batch_output_reads_fields_in_any_layout(backend, data):
    """Both formats; for ``"thd"`` the drawn ids may hold interior zeros or empty rows, which
    [thd-errors] rejects with a ValueError."""
    ids = draw_ids(data)
    output_format = data.draw(st.sampled_from(("thd", "batched")), label="output_format")
    tensors = {"document_ids": ids, "attention_document_ids": ids.clone(), **text_fields(ids)}
    contiguous, laid = lay_out(data, tensors, backend.device)
    call = f"convert_batch_output(batch, {output_format!r}) with {describe_inputs(laid)}, against contiguous copies"
    compare(
        tensor_function(backend, "convert_batch_output"),
        (dict(contiguous), output_format),
        (dict(laid), output_format),
        contiguous,
        laid,
        call=call,
        errors=(ValueError,) if output_format == "thd" else (),
    )
