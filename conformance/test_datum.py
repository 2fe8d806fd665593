"""``Datum``, ``Datum.to_features`` and ``collate_datums`` (SPEC.md, "``Datum`` and the
canonical collaters"; Decisions A6-A9, A19).

Golden values are literals written by hand from that section (worked examples I and J) and the
``collate_datums`` parts of the field reports F05, F06, F08, F11, F12, F13 and F15
(docs/sources.md#field-reports), whose values come from upstream nemo-automodel 0.7.0; the hypothesis
invariants compute their expected values in plain Python from the drawn inputs. The code
under test is reached only through the ``backend`` fixture.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from conformance._asserts import (
    Shape,
    assert_batch_equal,
    assert_keys,
    assert_raises,
    assert_tensor_equal,
)
from conformance._examples import bools, f32, long

F, T = False, True
X = -100  # CROSS_ENTROPY_IGNORE_IDX

PADDED_KEYS = ["input_ids", "attention_mask", "labels", "padding_mask"]
PACKED_KEYS = ["input_ids", "labels", "position_ids", "seq_lens", "seq_lens_padded", "qkv_format"]


# --- Example I / J datums (SPEC.md, worked examples I and J) -------------------------------


def example_datums(backend):
    """Fresh d1, d2 of Examples I and J."""
    d1 = backend.Datum(
        [10, 11, 12],
        {"target_tokens": [11, 12, 13], "weights": [1, 1, 0], "logprobs": [-0.5, -1, -2], "advantages": [0.5]},
    )
    d2 = backend.Datum(
        [20, 21],
        {"target_tokens": [21, 22], "weights": [0, 1], "logprobs": [-0.25, -0.75], "advantages": [-1.5]},
    )
    return [d1, d2]


EXAMPLE_I = {
    "input_ids": long([[10, 11, 12], [20, 21, 0]]),
    "attention_mask": long([[1, 1, 1], [1, 1, 0]]),
    "labels": long([[11, 12, X], [X, 22, X]]),
    "padding_mask": bools([[F, F, F], [F, F, T]]),
    "advantages": f32([0.5, -1.5]),
    "logprobs": f32([[-0.5, -1, -2], [-0.25, -0.75, 0]]),
    "weights": f32([[1, 1, 0], [0, 1, 0]]),
}
EXAMPLE_I_KEYS = [*PADDED_KEYS, "advantages", "logprobs", "weights"]

EXAMPLE_J = {
    "input_ids": long([[10, 11, 12, 20, 21]]),
    "labels": long([[11, 12, X, X, 22]]),
    "position_ids": long([[0, 1, 2, 0, 1]]),
    "seq_lens": long([[3, 2]]),
    "seq_lens_padded": long([[3, 2]]),
    "qkv_format": "thd",
    "advantages": f32([0.5, -1.5]),
    "logprobs": f32([[-0.5, -1, -2, -0.25, -0.75]]),
    "weights": f32([[1, 1, 0, 0, 1]]),
}
EXAMPLE_J_KEYS = [*PACKED_KEYS, "advantages", "logprobs", "weights"]


# --- Datum ----------------------------------------------------------------------------------


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_converts_lists_ints_to_int64_floats_to_float32(backend):
    """A list input_ids becomes int64; list/scalar loss_fn_inputs become int64/float32 tensors."""
    d = backend.Datum(
        [3, 4, 5], {"target_tokens": [4, 5, 6], "weights": [1.0, 0.5, 0.0], "advantages": 0.5, "count": 3}
    )
    assert dataclasses.is_dataclass(d), f"Datum is {type(d).__name__}, but should be a dataclass [datum-construct]"
    call = "Datum([3,4,5], {target_tokens: [4,5,6], weights: [1.0,0.5,0.0], advantages: 0.5, count: 3})"
    assert_tensor_equal("input_ids", d.input_ids, long([3, 4, 5]), clause="datum-construct", call=call)
    lfi = d.loss_fn_inputs
    assert_tensor_equal(
        "loss_fn_inputs['target_tokens']", lfi["target_tokens"], long([4, 5, 6]), clause="datum-construct", call=call
    )
    assert_tensor_equal(
        "loss_fn_inputs['weights']", lfi["weights"], f32([1.0, 0.5, 0.0]), clause="datum-construct", call=call
    )
    assert_tensor_equal(
        "loss_fn_inputs['advantages']",
        lfi["advantages"],
        torch.tensor(0.5, dtype=torch.float32),
        clause="datum-construct",
        call=call,
    )
    assert_tensor_equal(
        "loss_fn_inputs['count']", lfi["count"], torch.tensor(3, dtype=torch.int64), clause="datum-construct", call=call
    )
    assert sorted(lfi) == ["advantages", "count", "target_tokens", "weights"], (
        f"loss_fn_inputs keys {sorted(lfi)}, but should be the given four [datum-construct: {call}]"
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_numpy_input_ids_become_int64(backend):
    """A non-tensor input_ids (an int32 numpy array) is converted to int64."""
    d = backend.Datum(np.array([7, 8], dtype=np.int32))
    assert_tensor_equal(
        "input_ids", d.input_ids, long([7, 8]), clause="datum-construct", call="Datum(np.array([7,8], dtype=int32))"
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_keeps_tensor_dtypes(backend):
    """A tensor input_ids keeps its dtype (int32 stays int32); tensor loss_fn_inputs are kept."""
    ids = torch.tensor([11, 12, 13], dtype=torch.int32)
    targets = torch.tensor([12, 13, 0], dtype=torch.int32)
    logprobs = torch.tensor([-1.0, -2.0, -3.0], dtype=torch.float64)
    d = backend.Datum(ids, {"target_tokens": targets, "logprobs": logprobs})
    call = "Datum(int32 [11,12,13], {target_tokens: int32 [12,13,0], logprobs: float64 [-1,-2,-3]})"
    assert_tensor_equal(
        "input_ids", d.input_ids, torch.tensor([11, 12, 13], dtype=torch.int32), clause="datum-construct", call=call
    )
    assert_tensor_equal(
        "loss_fn_inputs['target_tokens']",
        d.loss_fn_inputs["target_tokens"],
        torch.tensor([12, 13, 0], dtype=torch.int32),
        clause="datum-construct",
        call=call,
    )
    assert_tensor_equal(
        "loss_fn_inputs['logprobs']",
        d.loss_fn_inputs["logprobs"],
        torch.tensor([-1.0, -2.0, -3.0], dtype=torch.float64),
        clause="datum-construct",
        call=call,
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
def test_datum_default_loss_fn_inputs_is_its_own_dict(backend):
    """Every Datum built without loss_fn_inputs gets its own empty dict."""
    a, b = backend.Datum([1, 2]), backend.Datum([3])
    assert a.loss_fn_inputs == {} and b.loss_fn_inputs == {}, (
        f"default loss_fn_inputs {a.loss_fn_inputs!r}, but should be {{}} [datum-construct]"
    )
    assert a.loss_fn_inputs is not b.loss_fn_inputs, "two Datums share one default dict [datum-construct]"
    a.loss_fn_inputs["weights"] = torch.tensor([1, 1])
    for other in (b, backend.Datum([4])):
        assert "weights" not in other.loss_fn_inputs, (
            "adding a key to one Datum's default loss_fn_inputs shows up in another [datum-construct]"
        )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-construct")
@pytest.mark.parametrize(
    ("ids", "length"),
    [([4, 5, 6], 3), ([9], 1), ([], 0), (torch.zeros(0, dtype=torch.int32), 0), (torch.arange(5), 5)],
    ids=["list3", "list1", "empty-list", "empty-int32", "arange5"],
)
def test_datum_seq_len(backend, ids, length):
    """seq_len is the Python int input_ids.shape[0]; an empty Datum is allowed (F12)."""
    d = backend.Datum(ids)
    assert type(d.seq_len) is int and d.seq_len == length, (
        f"seq_len={d.seq_len!r} ({type(d.seq_len).__name__}), but should be int {length} [datum-construct: Datum({ids!r})]"
    )
    if isinstance(ids, list) and not ids:
        assert_tensor_equal(
            "input_ids", d.input_ids, torch.zeros(0, dtype=torch.int64), clause="datum-construct", call="Datum([])"
        )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-errors")
@pytest.mark.parametrize(
    ("ids", "shape"),
    [
        (5, Shape()),
        (torch.tensor(5), Shape()),
        ([[1, 2], [3, 4]], Shape(2, 2)),
        (torch.zeros(1, 3, dtype=torch.int64), Shape(1, 3)),
    ],
    ids=["int", "0d-tensor", "nested-list", "2d-tensor"],
)
def test_datum_input_ids_not_1d(backend, ids, shape):
    """0-D and 2-D input_ids raise ValueError naming input_ids and the shape given."""
    assert_raises(ValueError, ("input_ids", shape), backend.Datum, ids, clause="datum-errors")


# --- to_features ----------------------------------------------------------------------------


def _assert_plain_int_lists(out: dict, *, call: str) -> None:
    __tracebackhide__ = True
    for key, value in out.items():
        if type(value) is not list or any(type(x) is not int for x in value):
            raise AssertionError(
                f"to_features()[{key!r}]={value!r}, but should be a plain list of Python ints [datum-to-features: {call}]"
            )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-to-features")
def test_to_features_labels_from_targets_and_weights(backend):
    """labels = target_tokens with ignore_index where weights == 0; side inputs are not emitted."""
    d = example_datums(backend)[0]
    out = d.to_features()
    call = "Example I d1.to_features()"
    want = {"input_ids": [10, 11, 12], "attention_mask": [1, 1, 1], "labels": [11, 12, X]}
    assert out == want, f"{out!r}, but should be {want!r} [datum-to-features: {call}]"
    _assert_plain_int_lists(out, call=call)
    out = d.to_features(ignore_index=-1)
    want["labels"] = [11, 12, -1]
    assert out == want, f"{out!r}, but should be {want!r} [datum-to-features: d1.to_features(ignore_index=-1)]"


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-to-features")
def test_to_features_without_targets_has_no_labels(backend):
    """Without target_tokens there is no labels key, even when weights are present."""
    d = backend.Datum([5, 0, 7], {"weights": [0, 0, 0], "logprobs": [-1.0, -2.0, -3.0]})
    out = d.to_features(ignore_index=-1)
    want = {"input_ids": [5, 0, 7], "attention_mask": [1, 1, 1]}
    assert out == want, f"{out!r}, but should be {want!r} [datum-to-features: Datum([5,0,7], weights only)]"
    _assert_plain_int_lists(out, call="Datum([5,0,7], weights only).to_features()")
    out = backend.Datum([]).to_features()
    assert out == {"input_ids": [], "attention_mask": []}, (
        f"{out!r}, but should be {{'input_ids': [], 'attention_mask': []}} [datum-to-features: Datum([]).to_features()]"
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-to-features")
@pytest.mark.parametrize(
    ("weights", "ignore_index", "labels"),
    [
        (0, X, [X, X, X]),
        (0.0, 7, [7, 7, 7]),
        (1, X, [2, 3, 4]),
        (None, X, [2, 3, 4]),
        ([0.5, 0.0, 2.0], -1, [2, -1, 4]),
    ],
    ids=["scalar-0", "scalar-0.0-ii7", "scalar-1", "no-weights", "float-weights"],
)
def test_to_features_weights_broadcast(backend, weights, ignore_index, labels):
    """weights broadcast: a scalar 0 masks every label; nonzero weights keep the target."""
    lfi: dict[str, Any] = {"target_tokens": [2, 3, 4]}
    if weights is not None:
        lfi["weights"] = weights
    d = backend.Datum([1, 2, 3], lfi)
    out = d.to_features(ignore_index=ignore_index)
    call = f"Datum([1,2,3], {lfi!r}).to_features(ignore_index={ignore_index})"
    assert out.get("labels") == labels, (
        f"labels={out.get('labels')!r}, but should be {labels!r} [datum-to-features: {call}]"
    )
    _assert_plain_int_lists(out, call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("datum-to-features")
def test_to_features_int32_tensors_give_plain_ints(backend):
    """int32 tensor fields still come out as plain lists of Python ints."""
    d = backend.Datum(
        torch.tensor([4, 5], dtype=torch.int32), {"target_tokens": torch.tensor([5, 6], dtype=torch.int32)}
    )
    out = d.to_features()
    want = {"input_ids": [4, 5], "attention_mask": [1, 1], "labels": [5, 6]}
    assert out == want, f"{out!r}, but should be {want!r} [datum-to-features: int32 Datum]"
    _assert_plain_int_lists(out, call="int32 Datum.to_features()")


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
                raise AssertionError(
                    f"datums[{index}] {part} changed: {now[part]!r}, but should be {then[part]!r} [{clause}: {call}]"
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


# --- collate_datums: golden cases -------------------------------------------------------------


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-padded", "collate-side-inputs", "collate-weights")
def test_example_i_padded(backend):
    """Example I: padded collation, side inputs in sorted key order, per-sample advantages."""
    out = backend.collate_datums(example_datums(backend))
    assert_keys(out, EXAMPLE_I_KEYS, clause="collate-padded", call="Example I")
    assert_batch_equal(out, EXAMPLE_I, clause="collate-padded", call="Example I: collate_datums([d1, d2])")


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-padded", "collate-side-inputs", "collate-weights")
def test_example_i_divisible_and_ignore_index(backend):
    """Example I with pad_seq_len_divisible=4, ignore_index=-1: masked -1, padding stays -100 (A6)."""
    call = "Example I: collate_datums([d1, d2], pad_seq_len_divisible=4, ignore_index=-1)"
    out = backend.collate_datums(example_datums(backend), pad_seq_len_divisible=4, ignore_index=-1)
    expected = {
        "input_ids": long([[10, 11, 12, 0], [20, 21, 0, 0]]),
        "attention_mask": long([[1, 1, 1, 0], [1, 1, 0, 0]]),
        "labels": long([[11, 12, -1, X], [-1, 22, X, X]]),
        "padding_mask": bools([[F, F, F, T], [F, F, T, T]]),
        "advantages": f32([0.5, -1.5]),
        "logprobs": f32([[-0.5, -1, -2, 0], [-0.25, -0.75, 0, 0]]),
        "weights": f32([[1, 1, 0, 0], [0, 1, 0, 0]]),
    }
    assert_keys(out, EXAMPLE_I_KEYS, clause="collate-padded", call=call)
    assert_batch_equal(out, expected, clause="collate-padded", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-packed", "collate-side-inputs", "collate-weights")
@pytest.mark.parametrize("divisible", [None, 4, 8])
def test_example_j_packed(backend, divisible):
    """Example J: packed collation; pad_seq_len_divisible is ignored."""
    call = f"Example J: collate_datums([d1, d2], packed=True, pad_seq_len_divisible={divisible})"
    out = backend.collate_datums(example_datums(backend), packed=True, pad_seq_len_divisible=divisible)
    assert_keys(out, EXAMPLE_J_KEYS, clause="collate-packed", call=call)
    assert_batch_equal(out, EXAMPLE_J, clause="collate-packed", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-packed", "collate-weights")
def test_example_j_packed_ignore_index(backend):
    """Packed mode writes ignore_index at zero-weight positions (there is no padding)."""
    out = backend.collate_datums(example_datums(backend), packed=True, ignore_index=-1)
    assert_tensor_equal(
        "labels",
        out["labels"],
        long([[11, 12, -1, -1, 22]]),
        clause="collate-weights",
        call="Example J, ignore_index=-1",
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-keyword-only")
@pytest.mark.parametrize(
    "extra", [(True,), (False, 4), (False, None, -1)], ids=["packed", "packed+divisible", "all-three"]
)
def test_collate_options_are_keyword_only(backend, extra):
    """packed, pad_seq_len_divisible and ignore_index passed positionally raise TypeError (A19)."""
    assert_raises(TypeError, (), backend.collate_datums, example_datums(backend), *extra, clause="collate-keyword-only")


# --- collate_datums: field reports --------------------------------------------------------------


def f05_datums(backend, *, weights: bool = True, per_sample: bool = False):
    l1: dict[str, Any] = {"target_tokens": [51, 52, 0], "advantages": [1.0] if per_sample else [1.0, 1.0, 1.0]}
    l2: dict[str, Any] = {"target_tokens": [61, 0], "advantages": [-0.5] if per_sample else [-0.5, -0.5]}
    if weights:
        l1["weights"], l2["weights"] = [1, 1, 0], [1, 0]
    return [backend.Datum([50, 51, 52], l1), backend.Datum([60, 61], l2)]


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-packed", "collate-weights", "collate-side-inputs")
def test_f05_packed_advantages_are_carried_raw(backend):
    """F05: per-token advantages across a packed boundary are carried raw, labels gate the loss."""
    call = "F05: collate_datums([d1, d2], packed=True)"
    out = backend.collate_datums(f05_datums(backend), packed=True)
    expected = {
        "input_ids": long([[50, 51, 52, 60, 61]]),
        "labels": long([[51, 52, X, 61, X]]),
        "position_ids": long([[0, 1, 2, 0, 1]]),
        "seq_lens": long([[3, 2]]),
        "seq_lens_padded": long([[3, 2]]),
        "qkv_format": "thd",
        "advantages": f32([[1.0, 1.0, 1.0, -0.5, -0.5]]),
        "weights": f32([[1.0, 1.0, 0.0, 1.0, 0.0]]),
    }
    assert_keys(out, [*PACKED_KEYS, "advantages", "weights"], clause="collate-packed", call=call)
    assert_batch_equal(out, expected, clause="collate-packed", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-side-inputs", "collate-packed", "collate-padded")
@pytest.mark.parametrize("packed", [True, False], ids=["packed", "padded"])
def test_f05_per_sample_advantages(backend, packed):
    """F05 per-sample variant: advantages [1.0] and [-0.5] stack to shape [2] in both modes."""
    out = backend.collate_datums(f05_datums(backend, per_sample=True), packed=packed)
    assert_tensor_equal(
        "advantages",
        out["advantages"],
        f32([1.0, -0.5]),
        clause="collate-side-inputs",
        call=f"F05 per-sample, packed={packed}",
    )
    width = 5 if packed else 3
    assert out["weights"].shape == ((1, 5) if packed else (2, 3)), (
        f"weights.shape={tuple(out['weights'].shape)}, but should be per-token (width {width}) [collate-side-inputs]"
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-packed", "collate-weights")
def test_f05_pitfall_without_weights_trains_placeholder_targets(backend):
    """F05 pitfall (upstream, kept): without weights the placeholder last targets are labels."""
    call = "F05 without weights: collate_datums([d1, d2], packed=True)"
    out = backend.collate_datums(f05_datums(backend, weights=False), packed=True)
    assert_keys(out, [*PACKED_KEYS, "advantages"], clause="collate-packed", call=call)
    assert_tensor_equal("labels", out["labels"], long([[51, 52, 0, 61, 0]]), clause="collate-weights", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-padded", "collate-padding-by-position", "collate-weights")
def test_f06_padded_pad_equals_eos(backend):
    """F06: with pad == eos == 0, a real EOS keeps its target and is not padding."""
    d1 = backend.Datum([5, 6, 0], {"target_tokens": [6, 0, 0], "weights": [1, 1, 0]})
    d2 = backend.Datum([7, 8, 9, 10], {"target_tokens": [8, 9, 10, 0], "weights": [1, 1, 1, 1]})
    call = "F06: collate_datums([d1, d2])"
    out = backend.collate_datums([d1, d2])
    expected = {
        "input_ids": long([[5, 6, 0, 0], [7, 8, 9, 10]]),
        "attention_mask": long([[1, 1, 1, 0], [1, 1, 1, 1]]),
        "labels": long([[6, 0, X, X], [8, 9, 10, 0]]),
        "padding_mask": bools([[F, F, F, T], [F, F, F, F]]),
        "weights": f32([[1, 1, 0, 0], [1, 1, 1, 1]]),
    }
    assert_keys(out, [*PADDED_KEYS, "weights"], clause="collate-padded", call=call)
    assert_batch_equal(out, expected, clause="collate-padding-by-position", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-packed")
@pytest.mark.parametrize("ignore_index", [X, -1])
def test_f08_packed_without_targets(backend, ignore_index):
    """F08: packed datums without target_tokens keep real EOS and give all-ignore_index labels."""
    call = f"F08: collate_datums([Datum([10,11,2]), Datum([20,21,22,2])], packed=True, ignore_index={ignore_index})"
    out = backend.collate_datums(
        [backend.Datum([10, 11, 2]), backend.Datum([20, 21, 22, 2])], packed=True, ignore_index=ignore_index
    )
    expected = {
        "input_ids": long([[10, 11, 2, 20, 21, 22, 2]]),
        "labels": long([[ignore_index] * 7]),
        "position_ids": long([[0, 1, 2, 0, 1, 2, 3]]),
        "seq_lens": long([[3, 4]]),
        "seq_lens_padded": long([[3, 4]]),
        "qkv_format": "thd",
    }
    assert_keys(out, PACKED_KEYS, clause="collate-packed", call=call)
    assert_batch_equal(out, expected, clause="collate-packed", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-padded", "collate-padding-by-position")
def test_f08_padded_without_targets(backend):
    """F08 padded: pad value 0, padding by position, and no labels key."""
    call = "F08: collate_datums([Datum([10,11,2]), Datum([20,21,22,2])])"
    out = backend.collate_datums([backend.Datum([10, 11, 2]), backend.Datum([20, 21, 22, 2])])
    expected = {
        "input_ids": long([[10, 11, 2, 0], [20, 21, 22, 2]]),
        "attention_mask": long([[1, 1, 1, 0], [1, 1, 1, 1]]),
        "padding_mask": bools([[F, F, F, T], [F, F, F, F]]),
    }
    assert_keys(out, ["input_ids", "attention_mask", "padding_mask"], clause="collate-padded", call=call)
    assert_batch_equal(out, expected, clause="collate-padded", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-weights", "collate-padded", "collate-packed", "collate-side-inputs")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_f11_all_zero_weights(backend, packed):
    """F11: a datum whose weights are all 0 gives all-ignore labels in both modes."""
    d = backend.Datum([1, 2, 3], {"target_tokens": [2, 3, 4], "weights": [0, 0, 0]})
    out = backend.collate_datums([d], packed=packed)
    assert_tensor_equal(
        "labels",
        out["labels"],
        long([[X, X, X]]),
        clause="collate-weights",
        call=f"F11: collate_datums([d], packed={packed})",
    )
    assert_tensor_equal(
        "weights",
        out["weights"],
        f32([[0, 0, 0]]),
        clause="collate-side-inputs",
        call=f"F11: collate_datums([d], packed={packed})",
    )


def f12_datums(backend):
    return [backend.Datum(x) for x in ([1, 2], [], [3, 4, 5], [], [6])]


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors", "collate-packed")
def test_f12_packed_empty_datum_raises(backend):
    """F12: packing an empty Datum raises ValueError (upstream: "cannot pack an empty sequence")."""
    assert_raises(ValueError, (), backend.collate_datums, f12_datums(backend), packed=True, clause="collate-errors")


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-empty-datum-padded", "collate-padded")
def test_f12_padded_empty_datums_are_all_padding_rows(backend):
    """F12: in padded mode an empty Datum is an all-padding row, not an error."""
    call = "F12: collate_datums([Datum([1,2]), Datum([]), Datum([3,4,5]), Datum([]), Datum([6])])"
    out = backend.collate_datums(f12_datums(backend))
    attention = [[1, 1, 0], [0, 0, 0], [1, 1, 1], [0, 0, 0], [1, 0, 0]]
    expected = {
        "input_ids": long([[1, 2, 0], [0, 0, 0], [3, 4, 5], [0, 0, 0], [6, 0, 0]]),
        "attention_mask": long(attention),
        "padding_mask": bools([[a == 0 for a in row] for row in attention]),
    }
    assert_keys(out, ["input_ids", "attention_mask", "padding_mask"], clause="collate-padded", call=call)
    assert_batch_equal(out, expected, clause="collate-empty-datum-padded", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-padded", "collate-packed", "datum-construct")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_f13_int32_datum_gives_int64_token_fields(backend, packed):
    """F13: int32 Datums give int64 token fields in both modes."""
    d1 = backend.Datum(
        torch.tensor([11, 12, 13], dtype=torch.int32),
        {"target_tokens": torch.tensor([12, 13, 0], dtype=torch.int32), "weights": [1, 1, 0]},
    )
    d2 = backend.Datum(
        torch.tensor([21, 22], dtype=torch.int32),
        {"target_tokens": torch.tensor([22, 0], dtype=torch.int32), "weights": [1, 0]},
    )
    call = f"F13: collate_datums([int32 d1, int32 d2], packed={packed})"
    out = backend.collate_datums([d1, d2], packed=packed)
    if packed:
        expected = {
            "input_ids": long([[11, 12, 13, 21, 22]]),
            "labels": long([[12, 13, X, 22, X]]),
            "position_ids": long([[0, 1, 2, 0, 1]]),
            "seq_lens": long([[3, 2]]),
            "seq_lens_padded": long([[3, 2]]),
            "qkv_format": "thd",
            "weights": f32([[1, 1, 0, 1, 0]]),
        }
    else:
        expected = {
            "input_ids": long([[11, 12, 13], [21, 22, 0]]),
            "attention_mask": long([[1, 1, 1], [1, 1, 0]]),
            "labels": long([[12, 13, X], [22, X, X]]),
            "padding_mask": bools([[F, F, F], [F, F, T]]),
            "weights": f32([[1, 1, 0], [1, 0, 0]]),
        }
    assert_keys(out, list(expected), clause="collate-packed" if packed else "collate-padded", call=call)
    assert_batch_equal(out, expected, clause="collate-packed" if packed else "collate-padded", call=call)


def f15_datums(backend):
    d1 = backend.Datum([11, 12, 13], {"target_tokens": [12, 13, 0], "weights": [1, 1, 0], "logprobs": [-0.5, -1, -2]})
    d2 = backend.Datum([21, 22], {"target_tokens": [22, 0], "weights": [1, 0], "logprobs": [-0.25, -0.75]})
    return [d1, d2]


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-padded", "collate-side-inputs")
def test_f15_pad_seq_len_divisible_pads_every_field(backend):
    """F15: pad_seq_len_divisible=8 gives width 8 for every per-token field, side inputs included."""
    call = "F15: collate_datums([d1, d2], pad_seq_len_divisible=8)"
    out = backend.collate_datums(f15_datums(backend), pad_seq_len_divisible=8)
    expected = {
        "input_ids": long([[11, 12, 13, 0, 0, 0, 0, 0], [21, 22, 0, 0, 0, 0, 0, 0]]),
        "attention_mask": long([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]]),
        "labels": long([[12, 13] + [X] * 6, [22] + [X] * 7]),
        "padding_mask": bools([[F, F, F] + [T] * 5, [F, F] + [T] * 6]),
        "logprobs": f32([[-0.5, -1, -2, 0, 0, 0, 0, 0], [-0.25, -0.75, 0, 0, 0, 0, 0, 0]]),
        "weights": f32([[1, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0]]),
    }
    assert_keys(out, [*PADDED_KEYS, "logprobs", "weights"], clause="collate-padded", call=call)
    assert_batch_equal(out, expected, clause="collate-padded", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-packed")
def test_f15_packed_ignores_divisor(backend):
    """F15: packed=True ignores pad_seq_len_divisible (width 5, not 8)."""
    call = "F15: collate_datums([d1, d2], packed=True, pad_seq_len_divisible=8)"
    out = backend.collate_datums(f15_datums(backend), packed=True, pad_seq_len_divisible=8)
    expected = {
        "input_ids": long([[11, 12, 13, 21, 22]]),
        "labels": long([[12, 13, X, 22, X]]),
        "position_ids": long([[0, 1, 2, 0, 1]]),
        "seq_lens": long([[3, 2]]),
        "seq_lens_padded": long([[3, 2]]),
        "qkv_format": "thd",
        "logprobs": f32([[-0.5, -1, -2, -0.25, -0.75]]),
        "weights": f32([[1, 1, 0, 1, 0]]),
    }
    assert_keys(out, [*PACKED_KEYS, "logprobs", "weights"], clause="collate-packed", call=call)
    assert_batch_equal(out, expected, clause="collate-packed", call=call)


# --- collate_datums: side inputs (A7) ---------------------------------------------------------


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-side-inputs")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_side_input_of_wrong_length_is_per_sample(backend, packed):
    """A7: a "per-token" value whose length is not seq_len makes the key per-sample (first elements)."""
    d1 = backend.Datum([1, 2, 3], {"logprobs": [-1.0, -2.0, -3.0]})
    d2 = backend.Datum([4, 5], {"logprobs": [-4.0, -5.0, -6.0]})
    out = backend.collate_datums([d1, d2], packed=packed)
    assert_tensor_equal(
        "logprobs",
        out["logprobs"],
        f32([-1.0, -4.0]),
        clause="collate-side-inputs",
        call=f"logprobs of lengths 3 and 3 on datums of 3 and 2 tokens, packed={packed}",
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-side-inputs")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_length_one_value_on_one_token_datums_is_per_token(backend, packed):
    """A length-1 value on 1-token datums is per-token; on a longer datum it is per-sample."""
    call = f"advantages [0.5], [1.5] on 1-token datums, packed={packed}"
    out = backend.collate_datums(
        [backend.Datum([7], {"advantages": [0.5]}), backend.Datum([8], {"advantages": [1.5]})], packed=packed
    )
    want = f32([[0.5, 1.5]]) if packed else f32([[0.5], [1.5]])
    assert_tensor_equal("advantages", out["advantages"], want, clause="collate-side-inputs", call=call)
    call = f"advantages [0.5] on 1 token, 1.5 (0-D) on 2 tokens, packed={packed}"
    out = backend.collate_datums(
        [backend.Datum([7], {"advantages": [0.5]}), backend.Datum([8, 9], {"advantages": 1.5})], packed=packed
    )
    assert_tensor_equal("advantages", out["advantages"], f32([0.5, 1.5]), clause="collate-side-inputs", call=call)


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-side-inputs", "collate-padded", "collate-packed")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_side_inputs_are_flattened_float32(backend, packed):
    """Side inputs are converted to float32 and flattened: [T, 1] values are per-token."""
    d1 = backend.Datum([1, 2], {"logprobs": torch.tensor([[-1.0], [-2.0]], dtype=torch.float64), "mask": [1, 0]})
    d2 = backend.Datum([3], {"logprobs": [[-3.0]], "mask": [1]})
    call = f"logprobs float64 [[-1],[-2]] and [[-3]], int mask, packed={packed}"
    out = backend.collate_datums([d1, d2], packed=packed)
    if packed:
        expected = {"logprobs": f32([[-1.0, -2.0, -3.0]]), "mask": f32([[1, 0, 1]])}
        keys = [*PACKED_KEYS, "logprobs", "mask"]
    else:
        expected = {"logprobs": f32([[-1.0, -2.0], [-3.0, 0.0]]), "mask": f32([[1, 0], [1, 0]])}
        keys = ["input_ids", "attention_mask", "padding_mask", "logprobs", "mask"]
    assert_keys(out, keys, clause="collate-side-inputs", call=call)
    assert_batch_equal(out, expected, clause="collate-side-inputs", call=call)


# --- collate_datums: errors and their order (A9) -------------------------------------------------


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_no_datum_raises(backend, packed):
    """collate_datums([]) raises ValueError (upstream: "collate_datums requires at least one Datum")."""
    assert_raises(ValueError, (), backend.collate_datums, [], packed=packed, clause="collate-errors")


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors")
def test_padded_targets_on_datum0_only_raises_keyerror(backend):
    """A9: padded, datum 0 has target_tokens and a later one not -> KeyError('labels') first."""
    datums = [backend.Datum([1, 2], {"target_tokens": [2, 3]}), backend.Datum([4, 5, 6])]
    error = assert_raises(KeyError, (), backend.collate_datums, datums, clause="collate-errors")
    assert error.args == ("labels",), f"KeyError{error.args!r}, but should be KeyError('labels') [collate-errors]"


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors")
@pytest.mark.parametrize(
    ("first_has_targets", "packed"),
    [(False, False), (False, True), (True, True)],
    ids=["padded-later-has", "packed-later-has", "packed-first-has"],
)
def test_mixed_targets_raise_valueerror(backend, first_has_targets, packed):
    """A9: the other mixed target_tokens cases fail the same-keys check with ValueError."""
    with_t = backend.Datum([1, 2], {"target_tokens": [2, 3]})
    without = backend.Datum([4, 5, 6])
    datums = [with_t, without] if first_has_targets else [without, with_t]
    assert_raises(
        ValueError, ("loss_fn_inputs",), backend.collate_datums, datums, packed=packed, clause="collate-errors"
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_different_side_input_keys_raise_valueerror(backend, packed):
    """Datums with different loss_fn_inputs key sets raise ValueError naming loss_fn_inputs."""
    datums = [
        backend.Datum([1, 2], {"target_tokens": [2, 3], "weights": [1, 1]}),
        backend.Datum([4, 5], {"target_tokens": [5, 6], "logprobs": [-1.0, -2.0]}),
    ]
    assert_raises(
        ValueError, ("loss_fn_inputs",), backend.collate_datums, datums, packed=packed, clause="collate-errors"
    )


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors")
def test_packed_wrong_length_targets_raise(backend):
    """Packed: target_tokens of the wrong length -> ValueError naming both lengths (upstream:
    "labels length 2 does not match input_ids length 3")."""
    datums = [backend.Datum([1, 2, 3], {"target_tokens": [2, 3]}), backend.Datum([4], {"target_tokens": [5]})]
    assert_raises(ValueError, (2, 3), backend.collate_datums, datums, packed=True, clause="collate-errors")


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_weights_that_do_not_broadcast_raise_runtimeerror(backend, packed):
    """weights that do not broadcast against target_tokens raise RuntimeError."""
    datums = [backend.Datum([1, 2, 3], {"target_tokens": [2, 3, 4], "weights": [1, 0]})]
    assert_raises(RuntimeError, (), backend.collate_datums, datums, packed=packed, clause="collate-errors")


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-errors")
def test_error_order_collation_before_key_check(backend):
    """Errors of step (2) come before the same-keys check (3); step (1) comes first of all."""
    # (An empty datum with different key sets raises ValueError from (2) or (3) alike; nothing
    # the clause asks a message to name tells them apart, so the order is checked on the two
    # inputs below, whose step-(2) errors are told apart by their type or named facts.)
    # Wrong-length targets and different key sets: the labels length error comes first.
    datums = [
        backend.Datum([1, 2, 3], {"target_tokens": [2, 3]}),
        backend.Datum([4], {"target_tokens": [5], "weights": [1]}),
    ]
    assert_raises(ValueError, (2, 3), backend.collate_datums, datums, packed=True, clause="collate-errors")
    # Weights that do not broadcast and different key sets: RuntimeError comes first.
    datums = [
        backend.Datum([1, 2, 3], {"target_tokens": [2, 3, 4], "weights": [1, 0]}),
        backend.Datum([4], {"target_tokens": [5]}),
    ]
    assert_raises(RuntimeError, (), backend.collate_datums, datums, clause="collate-errors")


@pytest.mark.requires("datum")
@pytest.mark.clause("collate-no-mutation")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_collate_does_not_mutate_example_datums(backend, packed):
    """collate_datums leaves the Example I/J datums exactly as they were."""
    datums = example_datums(backend)
    before = [_datum_state(d) for d in datums]
    backend.collate_datums(datums, packed=packed, pad_seq_len_divisible=4, ignore_index=-1)
    _assert_datums_unchanged(before, datums, clause="collate-no-mutation", call=f"Example I/J, packed={packed}")


# --- hypothesis invariants --------------------------------------------------------------------

MAX_DATUMS = 4
MAX_DATUM_LEN = 8
# Token ids 0..9: real tokens often equal the pad id (0) and the ignore_index values 0 and 7.
TOKENS = st.integers(0, 9)
# Exactly representable in float32, so side inputs compare exactly.
FLOATS = st.integers(-16, 16).map(lambda k: k / 4)
IGNORE_INDICES = (-100, -1, 0, 7)


class DatumCase(NamedTuple):
    """Drawn datums as plain Python values, with how each field is handed to ``Datum``."""

    ids: list[list[int]]
    lfi: list[dict[str, Any]]  # plain Python values: lists of ints/floats or scalars
    ids_form: str  # "list", "int64", "int32"
    targets_form: str  # "list", "int64", "int32"
    ignore_index: int
    divisible: int | None

    def build(self, backend) -> list:
        """Fresh ``Datum`` objects for this case."""
        dtype = {"int64": torch.int64, "int32": torch.int32}
        datums = []
        for ids, lfi in zip(self.ids, self.lfi):
            values = dict(lfi)
            if self.targets_form != "list" and "target_tokens" in values:
                values["target_tokens"] = torch.tensor(values["target_tokens"], dtype=dtype[self.targets_form])
            given = ids if self.ids_form == "list" else torch.tensor(ids, dtype=dtype[self.ids_form])
            datums.append(backend.Datum(given, values))
        return datums

    def describe(self, **options) -> str:
        rows = ", ".join(f"Datum({ids}, {lfi})" for ids, lfi in zip(self.ids, self.lfi))
        opts = ", ".join(f"{k}={v!r}" for k, v in options.items())
        return (
            f"collate_datums([{rows}], {opts}) with input_ids as {self.ids_form}, target_tokens as {self.targets_form}"
        )


@st.composite
def datum_cases(draw, min_len: int = 0) -> DatumCase:
    """1..MAX_DATUMS datums of 0..MAX_DATUM_LEN tokens (min_len at least) with one shared key set.

    ``weights`` is per-token (ints or floats, many zeros) or a scalar for every datum;
    ``logprobs`` is per-token; ``advantages`` is per-token, a length-1 list or a scalar.
    """
    n = draw(st.integers(1, MAX_DATUMS), label="num_datums")
    lengths = [draw(st.integers(min_len, MAX_DATUM_LEN), label=f"len{b}") for b in range(n)]
    ids = [draw(st.lists(TOKENS, min_size=t, max_size=t), label=f"ids{b}") for b, t in enumerate(lengths)]
    has_targets = draw(st.booleans(), label="has_targets")
    weights_form = draw(st.sampled_from(("none", "int", "float", "scalar")), label="weights")
    has_logprobs = draw(st.booleans(), label="has_logprobs")
    advantages_form = draw(st.sampled_from(("none", "token", "list1", "scalar")), label="advantages")
    weight_values = {
        "int": st.sampled_from((0, 0, 1, 2)),
        "float": st.sampled_from((0.0, 0.0, 0.5, 1.0)),
        "scalar": st.sampled_from((0, 1, 0.0, 0.5)),
    }
    lfi: list[dict[str, Any]] = []
    for t in lengths:
        values: dict[str, Any] = {}
        if has_targets:
            values["target_tokens"] = draw(st.lists(TOKENS, min_size=t, max_size=t))
        if weights_form in ("int", "float"):
            values["weights"] = draw(st.lists(weight_values[weights_form], min_size=t, max_size=t))
        elif weights_form == "scalar":
            values["weights"] = draw(weight_values["scalar"])
        if has_logprobs:
            values["logprobs"] = draw(st.lists(FLOATS, min_size=t, max_size=t))
        if advantages_form == "token":
            values["advantages"] = draw(st.lists(FLOATS, min_size=t, max_size=t))
        elif advantages_form == "list1":
            values["advantages"] = [draw(FLOATS)]
        elif advantages_form == "scalar":
            values["advantages"] = draw(FLOATS)
        lfi.append(values)
    return DatumCase(
        ids=ids,
        lfi=lfi,
        ids_form=draw(st.sampled_from(("list", "int64", "int32")), label="ids_form"),
        targets_form=draw(st.sampled_from(("list", "int64", "int32")), label="targets_form"),
        ignore_index=draw(st.sampled_from(IGNORE_INDICES), label="ignore_index"),
        divisible=draw(st.sampled_from((None, None, 1, 3, 4, 8)), label="pad_seq_len_divisible"),
    )


def _flat(value) -> list[float]:
    return [float(v) for v in value] if isinstance(value, list) else [float(value)]


def _labels(case: DatumCase, b: int, ignore_index: int) -> list[int]:
    """Datum b's labels: its targets with ignore_index where weights == 0 (scalars broadcast)."""
    lfi, t = case.lfi[b], len(case.ids[b])
    if "target_tokens" not in lfi:
        return [ignore_index] * t
    weights = lfi.get("weights")
    if weights is None:
        return list(lfi["target_tokens"])
    w = weights if isinstance(weights, list) else [weights] * t
    return [ignore_index if wi == 0 else ti for ti, wi in zip(lfi["target_tokens"], w)]


def expected_collation(case: DatumCase, *, packed: bool) -> dict[str, Any]:
    """The whole ``collate_datums`` output for ``case``, in key order, from the SPEC's collate_datums rules."""
    lengths = [len(x) for x in case.ids]
    n, ii = len(lengths), case.ignore_index
    has_targets = "target_tokens" in case.lfi[0]
    out: dict[str, Any] = {}
    if packed:
        out["input_ids"] = long([[tok for row in case.ids for tok in row]])
        out["labels"] = long([[lab for b in range(n) for lab in _labels(case, b, ii)]])
        out["position_ids"] = long([[p for t in lengths for p in range(t)]])
        out["seq_lens"] = long([lengths])
        out["seq_lens_padded"] = long([lengths])
        out["qkv_format"] = "thd"
    else:
        width = max(lengths)
        if case.divisible:
            width = -(-width // case.divisible) * case.divisible
        out["input_ids"] = long([row + [0] * (width - len(row)) for row in case.ids]).reshape(n, width)
        attention = [[1] * t + [0] * (width - t) for t in lengths]
        out["attention_mask"] = long(attention).reshape(n, width)
        if has_targets:
            out["labels"] = long([_labels(case, b, ii) + [X] * (width - lengths[b]) for b in range(n)]).reshape(
                n, width
            )
        out["padding_mask"] = bools([[a == 0 for a in row] for row in attention]).reshape(n, width)
    for key in sorted(set(case.lfi[0]) - {"target_tokens"}):
        rows = [_flat(lfi[key]) for lfi in case.lfi]
        if all(len(r) == t for r, t in zip(rows, lengths)):
            if packed:
                out[key] = f32([[v for r in rows for v in r]])
            else:
                out[key] = f32([r + [0.0] * (width - len(r)) for r in rows]).reshape(n, width)
        else:
            out[key] = f32([r[0] for r in rows])
    return out


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
    assert_keys(out, list(expected), clause="collate-padded", call=call)
    assert_batch_equal(out, expected, clause="collate-padded", call=call)
    # padding_mask is attention_mask == 0, and False on every real token whatever its value.
    assert_tensor_equal(
        "padding_mask", out["padding_mask"], out["attention_mask"] == 0, clause="collate-padding-by-position", call=call
    )
    for b, t in enumerate(len(x) for x in case.ids):
        if bool(out["padding_mask"][b, :t].any()):
            raise AssertionError(
                f"padding_mask[{b}, :{t}] has True on a real token [collate-padding-by-position: {call}]"
            )


@pytest.mark.clause("collate-packed", "collate-weights", "collate-side-inputs", "datum-construct")
@pytest.mark.requires("datum")
@given(data=st.data())
def test_packed_collation_invariants(backend, data):
    """Packed output equals the SPEC's collate_datums rules on drawn datums (keys, order, dtypes, values)."""
    case = data.draw(datum_cases(min_len=1), label="case")
    out, call = _collate(backend, case, case.build(backend), packed=True)
    expected = expected_collation(case, packed=True)
    assert_keys(out, list(expected), clause="collate-packed", call=call)
    assert_batch_equal(out, expected, clause="collate-packed", call=call)


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
                        raise AssertionError(
                            f"labels[{row}, {col}]={label} where datum {b}'s weight {i} is 0, but should be "
                            f"ignore_index {case.ignore_index} [collate-weights: {call}]"
                        )
                    per_token = weights.dim() == 2
                    value = float(weights[row, col]) if per_token else float(weights[b])
                    if value != 0.0:
                        raise AssertionError(
                            f"weights side input {value} where labels[{row}, {col}] is ignored for a zero weight, "
                            f"but should be 0 [collate-weights: {call}]"
                        )
                elif label != target:
                    raise AssertionError(
                        f"labels[{row}, {col}]={label}, but should be datum {b}'s own target {target} "
                        f"[collate-weights: {call}]"
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
    target, weights = [4, 5, 6], [1.0, 0.0, 1.0]
    given = {"target_tokens": target, "weights": weights, "advantages": 0.5}
    d = backend.Datum([3, 4, 5], given)
    call = "Datum([3,4,5], {target_tokens: [4,5,6], weights: [1.0,0.0,1.0], advantages: 0.5})"
    assert given == {"target_tokens": [4, 5, 6], "weights": [1.0, 0.0, 1.0], "advantages": 0.5}, (
        f"the caller's loss_fn_inputs became {given!r}, but should be unchanged [datum-construct: {call}]"
    )
    assert given["target_tokens"] is target and given["weights"] is weights, (
        f"the caller's loss_fn_inputs values were replaced [datum-construct: {call}]"
    )
    assert_tensor_equal(
        "loss_fn_inputs['weights']",
        d.loss_fn_inputs["weights"],
        f32([1.0, 0.0, 1.0]),
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
    assert d.loss_fn_inputs is not given, (
        f"the Datum keeps the caller's loss_fn_inputs dict itself [datum-construct: {call}]"
    )
    d.loss_fn_inputs["advantages"] = torch.tensor(0.5)
    assert sorted(given) == ["target_tokens", "weights"], (
        f"the caller's loss_fn_inputs gained {sorted(set(given) - {'target_tokens', 'weights'})} [datum-construct: {call}]"
    )
