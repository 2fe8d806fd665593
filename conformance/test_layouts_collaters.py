"""[tb-layout] for ``Datum``, ``Datum.to_features``, ``collate_datums`` and the canonical
collaters (``default_collater``, ``packed_sequence_thd_collater``, ``pack_features_for_thd``):
they read their tensor inputs by their values, whatever their memory layout (SPEC.md,
"``TrainingBatch`` fields"). The relation and how it is checked: conformance/test_layouts.py's
docstring and ``conformance/helpers/layout_relation.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.helpers.datums import datum_cases
from batchspec.conformance.helpers.layout_relation import (
    assert_same_behaviour,
    assert_same_output,
    assert_unmodified,
    compare,
    describe_inputs,
    draw_grid,
    lay_out,
    layout_failure,
    run,
    snapshot,
)

# --- Datum, Datum.to_features, collate_datums: a Datum's tensors ------------------------------


def datum_tensors(case) -> dict[str, torch.Tensor]:
    """A drawn ``datum_cases`` case's datums as tensors, by name (``datums[b].input_ids``,
    ``datums[b].<loss_fn_inputs key>``), converted as ``Datum`` converts non-tensors
    ([datum-construct]: ints int64, floats float32; ``input_ids`` int64)."""
    tensors = {}
    for b, (ids, lfi) in enumerate(zip(case.ids, case.lfi)):
        tensors[f"datums[{b}].input_ids"] = torch.as_tensor(ids, dtype=torch.int64)
        for key, value in lfi.items():
            tensors[f"datums[{b}].{key}"] = torch.as_tensor(value)
    return tensors


def build_datums(backend, case, tensors: Mapping[str, torch.Tensor]) -> list:
    return [
        backend.Datum(tensors[f"datums[{b}].input_ids"], {key: tensors[f"datums[{b}].{key}"] for key in case.lfi[b]})
        for b in range(len(case.ids))
    ]


def datum_view(datum) -> dict[str, Any]:
    """What a ``Datum`` holds, for comparing two of them."""
    return {"input_ids": datum.input_ids, "seq_len": datum.seq_len, "loss_fn_inputs": dict(datum.loss_fn_inputs)}


@pytest.mark.requires("datum")
@pytest.mark.clause("tb-layout")
@given(data=st.data())
def test_datum_and_collate_datums_read_tensors_in_any_layout(backend, data):
    """``Datum`` (what it holds), ``to_features`` and ``collate_datums`` in both modes, on
    datums whose ``input_ids`` and ``loss_fn_inputs`` tensors are laid out (a packed empty datum
    raises the ValueError [collate-errors] lists)."""
    case = data.draw(datum_cases(), label="case")
    contiguous, laid = lay_out(data, datum_tensors(case))
    before = snapshot(contiguous, laid)
    described = f"{case.describe()} with {describe_inputs(laid)}, against contiguous copies"
    built, laid_built = run(build_datums, backend, case, contiguous), run(build_datums, backend, case, laid)
    if built.error is not None:
        return  # Datum raised on the contiguous tensors: [datum-construct]'s checks judge that
    if laid_built.error is not None:
        error = laid_built.error
        raise layout_failure(
            f"Datum(...) raised {type(error).__name__}({error}), but should build the datums, as for the contiguous "
            "copies",
            described,
        ) from error
    given_datums, laid_datums = built.value, laid_built.value
    for b, (want, got) in enumerate(zip(given_datums, laid_datums)):
        assert_same_output(datum_view(got), datum_view(want), call=f"datum {b} of {described}")
        ignore_index = case.ignore_index
        assert_same_behaviour(
            run(want.to_features, ignore_index=ignore_index),
            run(got.to_features, ignore_index=ignore_index),
            call=f"datum {b}.to_features(ignore_index={ignore_index}) of {described}",
        )
    for packed in (False, True):
        options = {"packed": packed, "ignore_index": case.ignore_index}
        if case.divisible is not None:
            options["pad_seq_len_divisible"] = case.divisible
        assert_same_behaviour(
            run(backend.collate_datums, given_datums, **options),
            run(backend.collate_datums, laid_datums, **options),
            call=f"collate_datums(datums, **{options}) of {described}",
            errors=(ValueError,) if packed else (),
        )
    assert_unmodified(before, snapshot(contiguous, laid), call=described)


# --- default_collater, packed_sequence_thd_collater, pack_features_for_thd ---------------------


def _ints(data, shape: tuple[int, ...], cell: st.SearchStrategy, label: str, dtype=torch.int64) -> torch.Tensor:
    return torch.tensor(draw_grid(data, shape, cell, label), dtype=dtype).reshape(shape)


@st.composite
def default_collater_items(draw) -> tuple[list[dict], dict[str, torch.Tensor]]:
    """1..3 items: ``input_ids`` a ``[N]`` or ``[r, N]`` int64 tensor, sometimes an
    ``attention_mask`` of its shape, sometimes ``pixel_values`` float32 ``[k, C, H, W]`` (C > 1
    lets channels-last differ; sometimes one constant value), and ragged ``labels`` lists; and
    the tensors by name."""
    count = draw(st.integers(1, 3), label="items")
    width = draw(st.integers(1, 6), label="N")
    two_d = draw(st.booleans(), label="two_d")
    with_mask = draw(st.booleans(), label="attention_mask")
    pixels = draw(st.none() | st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)), label="C_H_W")
    constant_pixels = draw(st.booleans(), label="constant_pixels")
    items, tensors = [], {}
    for i in range(count):
        shape = (draw(st.integers(1, 2), label="rows"), width) if two_d else (width,)
        size = int(np.prod(shape))
        ids = torch.tensor(draw(st.lists(st.integers(0, 9), min_size=size, max_size=size)), dtype=torch.int64)
        tensors[f"batch[{i}]['input_ids']"] = ids.reshape(shape)
        if with_mask:
            mask = draw(st.lists(st.sampled_from((0, 1, 1)), min_size=size, max_size=size))
            tensors[f"batch[{i}]['attention_mask']"] = torch.tensor(mask, dtype=torch.int64).reshape(shape)
        if pixels is not None:
            pshape = (draw(st.integers(1, 2), label="images"), *pixels)
            psize = int(np.prod(pshape))
            cell = st.sampled_from((0.5,)) if constant_pixels else st.sampled_from((0.0, 0.5, 1.0, -2.5))
            values = draw(st.lists(cell, min_size=psize, max_size=psize))
            tensors[f"batch[{i}]['pixel_values']"] = torch.tensor(values, dtype=torch.float32).reshape(pshape)
        labels = draw(st.lists(st.integers(-1, 9), min_size=1, max_size=5), label="labels")
        items.append({"labels": labels})
    return items, tensors


def collater_batch(items: list[dict], tensors: Mapping[str, Any]) -> list[dict]:
    """``items`` (their non-tensor fields) with the named tensors ``batch[i]['key']`` put in."""
    batch = [dict(item) for item in items]
    for name, value in tensors.items():
        index, key = name.removeprefix("batch[").split("][")
        batch[int(index)][key.strip("]'")] = value
    return batch


@pytest.mark.requires("collaters")
@pytest.mark.clause("tb-layout")
@given(data=st.data())
def test_default_collater_reads_tensor_fields_in_any_layout(backend, data):
    items, tensors = data.draw(default_collater_items(), label="items")
    divisible = data.draw(st.sampled_from((None, 4)), label="pad_seq_len_divisible")
    contiguous, laid = lay_out(data, tensors)
    call = f"default_collater(batch, {divisible}) with labels {[i['labels'] for i in items]}; {describe_inputs(laid)}"
    compare(
        backend.default_collater,
        (collater_batch(items, contiguous), divisible),
        (collater_batch(items, laid), divisible),
        contiguous,
        laid,
        call=call + ", against contiguous copies",
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("tb-layout")
@given(data=st.data())
def test_packed_sequence_thd_collater_reads_tensor_fields_in_any_layout(backend, data):
    """Pre-packed items (tensors of one length ``L`` with ``seq_lens`` lists) and items THD
    synthesis packs (ragged tensors, sometimes an ``attention_mask``)."""
    count = data.draw(st.integers(1, 3), label="items")
    prepacked = data.draw(st.booleans(), label="prepacked")
    length = data.draw(st.integers(1, 6), label="L")
    with_mask = data.draw(st.booleans(), label="attention_mask")
    items, tensors = [], {}
    for i in range(count):
        size = length if prepacked else data.draw(st.integers(1, 6), label="length")
        tensors[f"batch[{i}]['input_ids']"] = _ints(data, (size,), st.integers(0, 9), "input_ids")
        tensors[f"batch[{i}]['labels']"] = _ints(data, (size,), st.integers(-1, 9), "labels")
        if prepacked:
            tensors[f"batch[{i}]['position_ids']"] = _ints(data, (size,), st.integers(0, 5), "position_ids")
            items.append({"seq_lens": [size], "seq_lens_padded": [size]})
            continue
        if with_mask:
            tensors[f"batch[{i}]['attention_mask']"] = _ints(data, (size,), st.sampled_from((0, 1, 1)), "mask")
        items.append({})
    contiguous, laid = lay_out(data, tensors)
    call = f"packed_sequence_thd_collater(batch) with {items}; {describe_inputs(laid)}, against contiguous copies"
    compare(
        backend.packed_sequence_thd_collater,
        (collater_batch(items, contiguous),),
        (collater_batch(items, laid),),
        contiguous,
        laid,
        call=call,
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("tb-layout")
@given(data=st.data())
def test_pack_features_for_thd_reads_tensor_features_in_any_layout(backend, data):
    count = data.draw(st.integers(1, 3), label="features")
    tensors = {}
    for i in range(count):
        size = data.draw(st.integers(1, 6), label="length")
        tensors[f"batch[{i}]['input_ids']"] = _ints(data, (size,), st.integers(0, 9), "input_ids")
        if data.draw(st.booleans(), label="labels"):
            tensors[f"batch[{i}]['labels']"] = _ints(data, (size,), st.integers(-1, 9), "labels")
    ignore_index = data.draw(st.sampled_from((-100, -1, 0)), label="ignore_index")
    contiguous, laid = lay_out(data, tensors)
    items = [{} for _ in range(count)]
    call = f"pack_features_for_thd(features, ignore_index={ignore_index}) with {describe_inputs(laid)}"
    compare(
        backend.pack_features_for_thd,
        (collater_batch(items, contiguous),),
        (collater_batch(items, laid),),
        contiguous,
        laid,
        call=call + ", against contiguous copies",
        kwargs={"ignore_index": ignore_index},
    )
