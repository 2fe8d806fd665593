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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import ClauseFailure, assert_equal, summary
from batchspec.conformance.helpers.inputs import Contract, Row, payload_form, sample_batch, with_token_field
from batchspec.conformance.helpers.layouts import describe_layout, laid_out
from batchspec.conformance.helpers.storage import input_state, state_changes
from batchspec.conformance.test_datum import datum_cases

SHOWN = 64  # a laid-out input's values are listed up to this many elements


# --- the relation: the non-contiguous input behaves as its contiguous copy ----------------------


class Ran(NamedTuple):
    """One call's result, or the exception it raised."""

    value: Any
    error: BaseException | None


def run(function: Callable, *args: Any, **kwargs: Any) -> Ran:
    try:
        return Ran(function(*args, **kwargs), None)
    except Exception as error:  # noqa: BLE001 - compared with the other call's behaviour
        return Ran(None, error)


def _copy(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value.copy()


def _contiguous_copy(value: Any, device: str) -> Any:
    """A new contiguous tensor (on ``device``) or C-contiguous array at offset 0 holding ``value``."""
    if isinstance(value, torch.Tensor):
        return value.to(device).clone(memory_format=torch.contiguous_format)
    return np.array(value, order="C", copy=True)


def _values(value: Any) -> str:
    if isinstance(value, (torch.Tensor, np.ndarray)) and int(np.prod(value.shape)) <= SHOWN:
        return repr(value.tolist())
    return summary(value)


def lay_out(data, tensors: Mapping[str, Any], device: str = "cpu") -> tuple[dict[str, Any], dict[str, Any]]:
    """Two private copies of ``tensors`` (tensors and numpy arrays, by name): contiguous ones (torch
    tensors on ``device``) and laid-out ones, where a drawn non-empty subset is stored in drawn
    non-contiguous layouts and the rest are plain copies."""
    contiguous = {name: _contiguous_copy(value, device) for name, value in tensors.items()}
    chosen = data.draw(st.lists(st.sampled_from(sorted(contiguous)), min_size=1, unique=True), label="laid out")
    laid = {
        name: data.draw(laid_out(value), label=f"layout of {name}") if name in chosen else _copy(value)
        for name, value in contiguous.items()
    }
    return contiguous, laid


def describe_inputs(laid: Mapping[str, Any]) -> str:
    """Each input's values and how it is stored."""
    return "; ".join(f"{name}={_values(value)} stored as {describe_layout(value)}" for name, value in laid.items())


def _fail(message: str, call: str) -> ClauseFailure:
    return ClauseFailure(f"{message} [tb-layout: {call}]", "tb-layout")


def assert_same_output(actual: Any, expected: Any, *, call: str, names: Sequence[str] | None = None) -> None:
    """The non-contiguous call's output equals the contiguous call's: the same keys (or, with
    ``names``, a tuple of that many items), each value exactly (``assert_equal``)."""
    __tracebackhide__ = True
    if names is not None:
        if not isinstance(actual, tuple) or len(actual) != len(names):
            raise _fail(
                f"output: {summary(actual)}, but should be a {len(names)}-tuple as for the contiguous copy", call
            )
        actual, expected = dict(zip(names, actual)), dict(zip(names, expected))
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping) or set(actual) != set(expected):
            shown = sorted(actual) if isinstance(actual, Mapping) else summary(actual)
            raise _fail(f"output keys {shown}, but should be {sorted(expected)} as for the contiguous copy", call)
        for key, want in expected.items():
            assert_equal(actual[key], want, clause="tb-layout", call=call, path=str(key))
        return
    assert_equal(actual, expected, clause="tb-layout", call=call)


def assert_same_behaviour(
    expected: Ran, actual: Ran, *, call: str, errors: tuple[type[BaseException], ...] = (), names=None
) -> bool:
    """``actual`` (the non-contiguous input's call) behaves as ``expected`` (its contiguous
    copy's): an error of one of ``errors`` (those SPEC lets this drawn input raise) is raised
    with the same type; a result is returned, equal (``assert_same_output``). Returns whether
    the relation was checked: False when the contiguous call raised anything else (other
    checks' business)."""
    __tracebackhide__ = True
    if expected.error is not None:
        if not isinstance(expected.error, errors):
            return False
        wanted = f"{type(expected.error).__name__} as its contiguous copy does ({expected.error})"
        if actual.error is None:
            raise _fail(f"returned {summary(actual.value)}, but should raise {wanted}", call)
        if type(actual.error) is not type(expected.error):
            raise _fail(
                f"raised {type(actual.error).__name__}({actual.error}), but should raise {wanted}", call
            ) from actual.error
        return True
    if actual.error is not None:
        raise _fail(
            f"raised {type(actual.error).__name__}({actual.error}), but should return what its contiguous copy returns",
            call,
        ) from actual.error
    assert_same_output(actual.value, expected.value, call=call, names=names)
    return True


def assert_unmodified(before: Mapping[str, dict], after: Mapping[str, dict], *, call: str) -> None:
    """The non-contiguous inputs (``before["laid"]``, ``input_state``) are as they were, unless
    the contiguous ones changed too (then modifying inputs is the no-mutation clauses' business)."""
    __tracebackhide__ = True
    changes = state_changes(before["laid"], after["laid"])
    if changes and not state_changes(before["contiguous"], after["contiguous"]):
        raise _fail(
            "modified its non-contiguous input, which it leaves untouched in its contiguous copy:\n  "
            + "\n  ".join(changes[:8])
            + "\n",
            call,
        )


def snapshot(contiguous: Mapping[str, Any], laid: Mapping[str, Any]) -> dict[str, dict]:
    return {"contiguous": input_state(dict(contiguous), "input"), "laid": input_state(dict(laid), "input")}


def compare(
    function: Callable,
    contiguous_args: tuple,
    laid_args: tuple,
    contiguous: Mapping[str, Any],
    laid: Mapping[str, Any],
    *,
    call: str,
    errors: tuple[type[BaseException], ...] = (),
    names: Sequence[str] | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> None:
    """``function(*laid_args)`` behaves as ``function(*contiguous_args)`` and leaves the laid-out
    tensors (``laid``, the inputs by name) unchanged [tb-layout]."""
    __tracebackhide__ = True
    kwargs = dict(kwargs or {})
    before = snapshot(contiguous, laid)
    expected = run(function, *contiguous_args, **kwargs)
    actual = run(function, *laid_args, **kwargs)
    assert_same_behaviour(expected, actual, call=call, errors=errors, names=names)
    assert_unmodified(before, snapshot(contiguous, laid), call=call)


def tensor_function(backend, name: str) -> Callable:
    """The backend's tensor function ``name``: the backend's own with ``--device`` (the suite's
    device wrapper copies inputs, losing their layout), else what the fixture gives."""
    return getattr(backend.impl, name) if backend.device != "cpu" else getattr(backend, name)


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
    described = cs.describe_call(
        rows,
        route.contract,
        ignore_index=case.ignore_index,
        mask_segment_starts=case.mask_segment_starts,
        xdoc=route.xdoc,
        output_format=route.output_format,
        pad_to_length=route.pad_to_length,
        pad_token_id=route.pad_token_id,
    )
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


def _grid(data, shape: tuple[int, ...], cell: st.SearchStrategy, label: str) -> list:
    size = int(np.prod(shape))
    return data.draw(st.lists(cell, min_size=size, max_size=size), label=label)


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
        eligible = torch.tensor(_grid(data, tuple(ids.shape), st.booleans(), "eligible")).reshape(ids.shape)
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
    keep = torch.tensor(_grid(data, shape, st.sampled_from((True, True, True, False)), "eligible")).reshape(shape)
    positions = torch.tensor(_grid(data, shape, st.integers(0, 12), "positions"), dtype=torch.int64).reshape(shape)
    axes = data.draw(st.sampled_from(("text", "mrope", "mrope_text")), label="positions_form")
    if axes == "mrope":
        positions = torch.tensor(_grid(data, (3, *shape), st.integers(0, 12), "mrope"), dtype=torch.int64).reshape(
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
        raise _fail(
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
    return torch.tensor(_grid(data, shape, cell, label), dtype=dtype).reshape(shape)


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
