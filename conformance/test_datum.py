"""``Datum``, ``Datum.to_features`` and ``collate_datums`` on live objects (SPEC.md, "``Datum``
and the canonical collaters"; Decisions A6-A9, A19), and their hypothesis invariants.

Every hand-written value (worked examples I and J, the ``collate_datums`` parts of the field
reports F05, F06, F08, F11, F12, F13 and F15, side inputs, the errors and their order) is a
golden case of ``golden/cases/datum.py``. Here: what a stored case cannot express (a numpy
``input_ids``, per-instance default mappings, keyword-only options passed positionally, the
exact type of returned values and exceptions, the identity of a Datum's own objects), and
the hypothesis invariants, whose expected values are computed in plain Python from the drawn
inputs. The code under test is reached only through the ``backend`` fixture.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.golden.call_arguments import build_datum
from batchspec.conformance.golden.case_values import stored_expected, stored_inputs, stored_options
from batchspec.conformance.helpers.asserts import (
    assert_batch_equal,
    assert_keys,
    assert_raises,
    assert_tensor_equal,
    check,
    clause_failure,
)
from batchspec.conformance.helpers.datums import (
    DatumCase,
    datum_cases,
    expected_collation,
)
from batchspec.conformance.helpers.literals import IGNORE_INDEX, long

X = IGNORE_INDEX


def example_datums(backend) -> list:
    """Fresh d1, d2 of Examples I and J (golden case test_collate_example_i_padded's datums)."""
    return [build_datum(backend, spec) for spec in stored_inputs("test_collate_example_i_padded")["datums"]]


# --- Datum ----------------------------------------------------------------------------------


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_is_a_dataclass_holding_exactly_the_given_keys(backend):
    """A Datum is a dataclass; its loss_fn_inputs hold exactly the keys given (the converted
    values: golden case test_datum_lists_become_int64_and_float32)."""
    spec = stored_inputs("test_datum_lists_become_int64_and_float32")
    d = build_datum(backend, spec)
    check(
        dataclasses.is_dataclass(d),
        f"Datum is {type(d).__name__}, but should be a dataclass",
        clause="datum-construct",
    )
    check(
        sorted(d.loss_fn_inputs) == sorted(spec["loss_fn_inputs"]),
        f"loss_fn_inputs keys {sorted(d.loss_fn_inputs)}, but should be the given {sorted(spec['loss_fn_inputs'])}",
        clause="datum-construct",
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_numpy_input_ids_become_int64(backend):
    """A non-tensor input_ids (an int32 numpy array, which a stored case cannot hold) is
    converted to int64."""
    d = backend.Datum(np.array([7, 8], dtype=np.int32))
    assert_tensor_equal(
        "input_ids", d.input_ids, long([7, 8]), clause="datum-construct", call="Datum(np.array([7,8], dtype=int32))"
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_default_loss_fn_inputs_is_its_own_dict(backend):
    """Every Datum built without loss_fn_inputs gets its own empty dict."""
    a, b = backend.Datum([1, 2]), backend.Datum([3])
    check(
        a.loss_fn_inputs == {} and b.loss_fn_inputs == {},
        f"default loss_fn_inputs {a.loss_fn_inputs!r}, but should be {{}}",
        clause="datum-construct",
    )
    check(
        a.loss_fn_inputs is not b.loss_fn_inputs,
        "two Datums share one default dict",
        clause="datum-construct",
    )
    a.loss_fn_inputs["weights"] = torch.tensor([1, 1])
    for other in (b, backend.Datum([4])):
        check(
            "weights" not in other.loss_fn_inputs,
            "adding a key to one Datum's default loss_fn_inputs shows up in another",
            clause="datum-construct",
        )


# --- to_features ----------------------------------------------------------------------------

# The golden to_features cases whose output is checked here for its types: plain lists of Python ints.
TO_FEATURES_CASES = [
    "test_to_features_default_ignore_index",
    "test_to_features_labels_from_targets_and_weights",
    "test_to_features_without_targets_ignores_weights",
    "test_to_features_of_an_empty_datum",
    "test_to_features_of_int32_tensors",
    "test_to_features_weights_scalar_0",
    "test_to_features_weights_scalar_0_0_ignore_index_7",
    "test_to_features_weights_scalar_1",
    "test_to_features_weights_absent",
    "test_to_features_weights_floats",
]


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-to-features")
@pytest.mark.parametrize("name", TO_FEATURES_CASES)
def test_to_features_gives_plain_lists_of_python_ints(backend, name):
    """Every value of to_features() is a list (not a tuple, not a tensor) of Python ints, also for
    int32 tensor fields (the values: golden case ``name``)."""
    options = stored_options(name)
    out = build_datum(backend, stored_inputs(name)).to_features(**options)
    call = f"golden case {name}: Datum(...).to_features({options})"
    for key, value in out.items():
        if type(value) is not list or any(type(x) is not int for x in value):
            raise clause_failure(
                f"to_features()[{key!r}]={value!r}, but should be a plain list of Python ints",
                clause="datum-to-features",
                call=call,
            )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-to-features")
def test_to_features_ignore_index_is_keyword_only(backend):
    """to_features(-1) (ignore_index passed positionally) raises TypeError (A19)."""
    d = backend.Datum([1, 2], {"target_tokens": [2, 3], "weights": [0, 1]})
    assert_raises(TypeError, (), d.to_features, -1, clause="datum-to-features")


def _datum_state(d) -> dict:
    """Identity and value snapshot of a Datum: its tensors and its loss_fn_inputs mapping."""
    lfi = d.loss_fn_inputs
    return {
        "input_ids object": id(d.input_ids),
        "input_ids": (d.input_ids.dtype, tuple(d.input_ids.shape), d.input_ids.tolist()),
        "loss_fn_inputs object": id(lfi),
        "loss_fn_inputs keys": list(lfi),
        "loss_fn_inputs objects": {k: id(v) for k, v in lfi.items()},
        "loss_fn_inputs values": {k: (v.dtype, tuple(v.shape), v.tolist()) for k, v in lfi.items()},
    }


def _assert_datums_unchanged(before: list[dict], datums, *, clause: str, call: str) -> None:
    __tracebackhide__ = True
    for index, (then, d) in enumerate(zip(before, datums)):
        now = _datum_state(d)
        for part in then:
            if now[part] != then[part]:
                raise clause_failure(
                    f"datums[{index}] {part} changed: {now[part]!r}, but should be {then[part]!r}",
                    clause=clause,
                    call=call,
                )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-to-features")
def test_to_features_does_not_modify_the_datum(backend):
    """to_features leaves input_ids and every loss_fn_inputs entry as they were."""
    datums = example_datums(backend)
    before = [_datum_state(d) for d in datums]
    for d in datums:
        d.to_features(ignore_index=-1)
        d.to_features()
    _assert_datums_unchanged(before, datums, clause="datum-to-features", call="Example I datums .to_features()")


# --- collate_datums -----------------------------------------------------------------------------


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors")
def test_padded_targets_on_datum0_only_raises_keyerror_labels(backend):
    """A9: padded, datum 0 has target_tokens and a later one not -> exactly KeyError('labels')
    (golden case test_collate_padded_targets_on_datum0_only pins the type and the name)."""
    datums = [
        build_datum(backend, spec) for spec in stored_inputs("test_collate_padded_targets_on_datum0_only")["datums"]
    ]
    error = assert_raises(KeyError, (), backend.collate_datums, datums, clause="collate-errors")
    check(
        error.args == ("labels",),
        f"KeyError{error.args!r}, but should be KeyError('labels')",
        clause="collate-errors",
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-no-mutation")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_collate_does_not_mutate_example_datums(backend, packed):
    """collate_datums leaves the Example I/J datums exactly as they were, their objects included."""
    datums = example_datums(backend)
    before = [_datum_state(d) for d in datums]
    backend.collate_datums(datums, packed=packed, pad_seq_len_divisible=4, ignore_index=-1)
    _assert_datums_unchanged(before, datums, clause="collate-no-mutation", call=f"Example I/J, packed={packed}")


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-divisible-zero")
def test_collate_divisible_zero_is_no_rounding(backend):
    """Padded, ``pad_seq_len_divisible=0`` (no length is a multiple of 0) is read as ``None``: Example I's
    width stays its longest datum's 3 tokens and nothing is raised (SHOULD, SPEC 1.5; the expected
    values are golden case test_collate_example_i_padded's)."""
    try:
        out = backend.collate_datums(example_datums(backend), pad_seq_len_divisible=0)
    except Exception as error:
        raise clause_failure(
            f"pad_seq_len_divisible=0 raised {type(error).__name__}({str(error)[:200]}), but should give the "
            "longest length's width as None does",
            clause="collate-divisible-zero",
        ) from error
    want = stored_expected("test_collate_example_i_padded")
    got = {key: out.get(key) for key in want}
    check(
        all(isinstance(got[key], torch.Tensor) and torch.equal(got[key], want[key]) for key in want),
        f"pad_seq_len_divisible=0 gave {got}, but should give what None gives, the longest length's width {want}",
        clause="collate-divisible-zero",
    )


# --- hypothesis invariants --------------------------------------------------------------------


def _weight_ruled(case: DatumCase, packed: bool, width: int) -> torch.Tensor:
    """bool, the labels' shape: the real tokens whose weight is not positive, where
    [collate-weights] (``weights == 0`` masks, any other weight keeps the target) decides the
    label."""
    rows = []
    for lfi, ids in zip(case.lfi, case.ids):
        weights = lfi.get("weights")
        w = [] if weights is None else weights if isinstance(weights, list) else [weights] * len(ids)
        rows.append([wi <= 0 for wi in w] if len(w) == len(ids) else [False] * len(ids))
    if packed:
        return torch.tensor([[v for row in rows for v in row]], dtype=torch.bool).reshape(1, -1)
    return torch.tensor([row + [False] * (width - len(row)) for row in rows], dtype=torch.bool).reshape(
        len(rows), width
    )


def _assert_collation_equal(out, expected: dict, case: DatumCase, *, packed: bool, call: str) -> None:
    """``out`` holds ``expected``'s keys in order and values, each key blamed on its own clause:
    a side input on [collate-side-inputs], a label that differs only where a non-positive weight
    decides it on [collate-weights], anything else on the mode's layout clause
    ([collate-packed] or [collate-padded])."""
    __tracebackhide__ = True
    layout = "collate-packed" if packed else "collate-padded"
    assert_keys(out, list(expected), clause=layout, call=call)
    side_inputs = set(case.lfi[0]) - {"target_tokens"}
    for key, want in expected.items():
        clause = "collate-side-inputs" if key in side_inputs else layout
        got = out[key]
        if key == "labels" and isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype == want.dtype:
            differ = got != want
            if bool(differ.any()) and bool(_weight_ruled(case, packed, want.shape[-1])[differ].all()):
                clause = "collate-weights"
        assert_batch_equal(out, expected, clause=clause, call=call, keys=[key])


def _collate(backend, case: DatumCase, datums, *, packed: bool):
    kwargs: dict[str, Any] = {"packed": packed, "ignore_index": case.ignore_index}
    if case.divisible is not None:
        kwargs["pad_seq_len_divisible"] = case.divisible
    return backend.collate_datums(datums, **kwargs), case.describe(**kwargs)


@pytest.mark.clause(
    "collate-padded",
    "collate-padding-by-position",
    "collate-weights",
    "collate-side-inputs",
    "collate-empty-datum-padded",
    "datum-construct",
)
@pytest.mark.requires("datum")
@given(data=st.data())
def test_padded_collation_invariants(backend, data):
    """Padded output equals the SPEC's collate_datums rules on drawn datums; padding_mask is
    attention_mask == 0."""
    case = data.draw(datum_cases(min_len=0), label="case")
    out, call = _collate(backend, case, case.build(backend), packed=False)
    expected = expected_collation(case, packed=False)
    _assert_collation_equal(out, expected, case, packed=False, call=call)
    # padding_mask is attention_mask == 0, and False on every real token whatever its value.
    assert_tensor_equal(
        "padding_mask", out["padding_mask"], out["attention_mask"] == 0, clause="collate-padding-by-position", call=call
    )
    for b, t in enumerate(len(x) for x in case.ids):
        if bool(out["padding_mask"][b, :t].any()):
            raise clause_failure(
                f"padding_mask[{b}, :{t}] has True on a real token",
                clause="collate-padding-by-position",
                call=call,
            )


@pytest.mark.clause("collate-packed", "collate-weights", "collate-side-inputs", "datum-construct")
@pytest.mark.requires("datum")
@given(data=st.data())
def test_packed_collation_invariants(backend, data):
    """Packed output equals the SPEC's collate_datums rules on drawn datums (keys, order, dtypes, values)."""
    case = data.draw(datum_cases(min_len=1), label="case")
    out, call = _collate(backend, case, case.build(backend), packed=True)
    expected = expected_collation(case, packed=True)
    _assert_collation_equal(out, expected, case, packed=True, call=call)


@pytest.mark.clause("collate-weights")
@pytest.mark.requires("datum")
@given(data=st.data())
def test_zero_weight_means_ignore_index_in_both_modes(backend, data):
    """Wherever a datum's weight is 0, labels == ignore_index and the weights side input is 0."""
    case = data.draw(datum_cases(min_len=1), label="case")
    if "weights" not in case.lfi[0] or "target_tokens" not in case.lfi[0]:
        case = case._replace(
            lfi=[
                {"target_tokens": [0] * len(ids), "weights": [k % 2 for k in range(len(ids))], **lfi}
                for ids, lfi in zip(case.ids, case.lfi)
            ]
        )
    datums = case.build(backend)
    for packed in (False, True):
        out, call = _collate(backend, case, datums, packed=packed)
        labels, weights = out["labels"], out["weights"]
        offset = 0
        for b, ids in enumerate(case.ids):
            t = len(ids)
            w = case.lfi[b]["weights"]
            w = w if isinstance(w, list) else [w] * t
            for i in range(t):
                row, col = (0, offset + i) if packed else (b, i)
                label = int(labels[row, col])
                target = case.lfi[b]["target_tokens"][i]
                if w[i] == 0:
                    if label != case.ignore_index:
                        raise clause_failure(
                            f"labels[{row}, {col}]={label} where datum {b}'s weight {i} is 0, but should be "
                            f"ignore_index {case.ignore_index}",
                            clause="collate-weights",
                            call=call,
                        )
                    per_token = weights.dim() == 2
                    value = float(weights[row, col]) if per_token else float(weights[b])
                    if value != 0.0:
                        raise clause_failure(
                            f"weights side input {value} where labels[{row}, {col}] is ignored for a zero weight, "
                            "but should be 0",
                            clause="collate-weights",
                            call=call,
                        )
                elif label != target:
                    raise clause_failure(
                        f"labels[{row}, {col}]={label}, but should be datum {b}'s own target {target}",
                        clause="collate-weights",
                        call=call,
                    )
            offset += t


@pytest.mark.clause("collate-packed", "collate-padded", "collate-side-inputs")
@pytest.mark.requires("datum")
@given(data=st.data())
def test_packed_and_padded_carry_the_same_targets(backend, data):
    """Padded row b's first T_b entries equal datum b's slice of the packed row."""
    case = data.draw(datum_cases(min_len=1), label="case")
    datums = case.build(backend)
    padded, call_padded = _collate(backend, case, datums, packed=False)
    packed, call_packed = _collate(backend, case, datums, packed=True)
    call = f"{call_padded} vs packed=True"
    per_token = ["input_ids"] + (["labels"] if "labels" in padded else [])
    per_token += [k for k in sorted(set(case.lfi[0]) - {"target_tokens"}) if packed[k].dim() == 2]
    offset = 0
    for b, ids in enumerate(case.ids):
        t = len(ids)
        for key in per_token:
            assert_tensor_equal(
                f"padded {key}[{b}, :{t}]",
                padded[key][b, :t],
                packed[key][0, offset : offset + t],
                clause="collate-packed",
                call=call,
            )
        offset += t
    for key in sorted(set(case.lfi[0]) - {"target_tokens"}):
        if packed[key].dim() == 1:
            assert_tensor_equal(f"per-sample {key}", padded[key], packed[key], clause="collate-side-inputs", call=call)
    if "labels" not in padded:
        assert_tensor_equal(
            "packed labels",
            packed["labels"],
            long([[case.ignore_index] * offset]),
            clause="collate-packed",
            call=call_packed,
        )


@pytest.mark.clause("collate-no-mutation")
@pytest.mark.requires("datum")
@given(data=st.data())
def test_collate_datums_never_mutates_its_datums(backend, data):
    """Neither the datums' tensors nor their loss_fn_inputs mappings change, in either mode."""
    case = data.draw(datum_cases(min_len=1), label="case")
    datums = case.build(backend)
    before = [_datum_state(d) for d in datums]
    for packed in (False, True):
        _, call = _collate(backend, case, datums, packed=packed)
        _assert_datums_unchanged(before, datums, clause="collate-no-mutation", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_leaves_the_callers_loss_fn_inputs_unchanged(backend):
    """The caller's mapping keeps its keys and its list values; the Datum converts into its own."""
    spec = stored_inputs("test_datum_float_weights_become_float32")  # the converted values: that golden case
    given = spec["loss_fn_inputs"]  # lists and a float, as a caller writes them
    objects, values = dict(given), copy.deepcopy(given)
    backend.Datum(spec["input_ids"], given)
    call = f"Datum({spec['input_ids']}, {values})"
    check(
        given == values,
        f"the caller's loss_fn_inputs became {given!r}, but should be unchanged",
        clause="datum-construct",
        call=call,
    )
    check(
        all(given[k] is v for k, v in objects.items()),
        "the caller's loss_fn_inputs values were replaced",
        clause="datum-construct",
        call=call,
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_holds_a_mapping_of_its_own_even_when_every_value_is_a_tensor(backend):
    """Nothing to convert is no reason to keep the caller's dict: adding a key to the datum's
    mapping must not add it to the caller's."""
    given = {"target_tokens": torch.tensor([4, 5, 6]), "weights": torch.tensor([1.0, 0.0, 1.0])}
    d = backend.Datum(torch.tensor([3, 4, 5]), given)
    call = "Datum(tensor([3,4,5]), {target_tokens: tensor, weights: tensor})"
    check(
        d.loss_fn_inputs is not given,
        "the Datum keeps the caller's loss_fn_inputs dict itself",
        clause="datum-construct",
        call=call,
    )
    d.loss_fn_inputs["advantages"] = torch.tensor(0.5)
    check(
        sorted(given) == ["target_tokens", "weights"],
        f"the caller's loss_fn_inputs gained {sorted(set(given) - {'target_tokens', 'weights'})}",
        clause="datum-construct",
        call=call,
    )
