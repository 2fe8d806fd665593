"""The canonical collaters: ``default_collater``, ``packed_sequence_thd_collater`` and
``pack_features_for_thd`` (SPEC.md, "The canonical collaters"; Decisions D-6).

Every expected value is a literal written by hand from those clauses, which follow upstream
nemo-automodel 0.7.0's ``datasets/utils.py`` (docs/sources.md#nemo-automodel). Upstream
mutates some of these collaters' inputs, which [collaters-no-mutation] (D-6) forbids; that
clause is checked in ``test_collaters_no_mutation.py``. Here every call gets freshly built
inputs and no check depends on what happens to them. The code under test is reached only
through the ``backend`` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance._asserts import (
    assert_batch_equal,
    assert_keys,
    assert_raises,
    assert_tensor_equal,
)
from conformance._examples import bools, long

F, T = False, True
X = -100
PAD = "___PAD_TOKEN_IDS___"
THD_KEYS = ["input_ids", "labels", "position_ids", "seq_lens", "seq_lens_padded", "qkv_format"]


# --- default_collater ---------------------------------------------------------------------------


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields", "dcoll-pad-values", "dcoll-padding-mask")
def test_default_collater_pad_values_per_key(backend):
    """labels -100, attention_mask/loss_mask/input_ids 0, other keys item 0's last element."""
    batch = [
        {
            "input_ids": [1, 2, 3],
            "labels": [2, 3, 4],
            "attention_mask": [1, 1, 1],
            "loss_mask": [1, 1, 0],
            "token_type_ids": [5, 6, 7],
        },
        {"input_ids": [4], "labels": [5], "attention_mask": [1], "loss_mask": [1], "token_type_ids": [8]},
    ]
    call = "default_collater([{ids 3 long, token_type_ids [5,6,7]}, {ids 1 long, token_type_ids [8]}])"
    out = backend.default_collater(batch)
    expected = {
        "input_ids": long([[1, 2, 3], [4, 0, 0]]),
        "labels": long([[2, 3, 4], [5, X, X]]),
        "attention_mask": long([[1, 1, 1], [1, 0, 0]]),
        "loss_mask": long([[1, 1, 0], [1, 0, 0]]),
        "token_type_ids": long([[5, 6, 7], [8, 7, 7]]),
        "padding_mask": bools([[F, F, F], [F, T, T]]),
    }
    assert_keys(out, list(expected), clause="dcoll-fields", call=call)
    assert_batch_equal(out, expected, clause="dcoll-pad-values", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-pad-values")
def test_default_collater_unknown_key_pads_with_item0_last_element(backend):
    """The quirk uses item 0's last element, even when item 0 is the shorter item."""
    batch = [{"input_ids": [1], "segment": [9]}, {"input_ids": [2, 3, 4], "segment": [1, 2, 3]}]
    call = "default_collater([{segment: [9]}, {segment: [1,2,3]}])"
    out = backend.default_collater(batch)
    assert_tensor_equal("segment", out["segment"], long([[9, 9, 9], [1, 2, 3]]), clause="dcoll-pad-values", call=call)
    assert_tensor_equal(
        "input_ids", out["input_ids"], long([[1, 0, 0], [2, 3, 4]]), clause="dcoll-pad-values", call=call
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-pad-values", "dcoll-padding-mask", "dcoll-fields")
@pytest.mark.parametrize("on_every_item", [False, True], ids=["item0-only", "every-item"])
def test_default_collater_pad_override(backend, on_every_item):
    """___PAD_TOKEN_IDS___ on item 0 overrides the pad values and is absent from the output."""
    override = {"input_ids": 7, "labels": -1, "attention_mask": 0, "segment": 3}
    batch = [
        {
            "input_ids": [1, 2, 3],
            "labels": [2, 3, 4],
            "attention_mask": [1, 1, 1],
            "segment": [5, 5, 5],
            PAD: dict(override),
        },
        {"input_ids": [4], "labels": [5], "attention_mask": [1], "segment": [6]},
    ]
    if on_every_item:
        batch[1][PAD] = dict(override)
    call = f"default_collater(..., {PAD}={override} on {'every item' if on_every_item else 'item 0'})"
    out = backend.default_collater(batch)
    expected = {
        "input_ids": long([[1, 2, 3], [4, 7, 7]]),
        "labels": long([[2, 3, 4], [5, -1, -1]]),
        "attention_mask": long([[1, 1, 1], [1, 0, 0]]),
        "segment": long([[5, 5, 5], [6, 3, 3]]),
        "padding_mask": bools([[F, F, F], [F, T, T]]),
    }
    assert_keys(out, list(expected), clause="dcoll-pad-values", call=call)
    assert_batch_equal(out, expected, clause="dcoll-pad-values", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-padding-mask")
def test_default_collater_padding_mask_from_attention_mask(backend):
    """With attention_mask present, padding_mask is attention_mask == 0, not a token-value test."""
    batch = [{"input_ids": [5, 0, 0], "attention_mask": [1, 1, 0]}, {"input_ids": [0], "attention_mask": [1]}]
    call = "default_collater([{ids [5,0,0], am [1,1,0]}, {ids [0], am [1]}])"
    out = backend.default_collater(batch)
    expected = {
        "input_ids": long([[5, 0, 0], [0, 0, 0]]),
        "attention_mask": long([[1, 1, 0], [1, 0, 0]]),
        "padding_mask": bools([[F, F, T], [F, T, T]]),
    }
    assert_keys(out, list(expected), clause="dcoll-padding-mask", call=call)
    assert_batch_equal(out, expected, clause="dcoll-padding-mask", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-padding-mask", "dcoll-pad-values")
@pytest.mark.parametrize("pad_id", [None, 7])
def test_default_collater_padding_mask_from_input_ids(backend, pad_id):
    """Without attention_mask, padding_mask is input_ids == the pad id (override, else 0)."""
    p = 0 if pad_id is None else pad_id
    first = {"input_ids": [p, 1, 2], "labels": [1, 2, 3]}
    if pad_id is not None:
        first[PAD] = {"input_ids": pad_id}
    batch = [first, {"input_ids": [3], "labels": [4]}]
    call = f"default_collater([{{input_ids: [{p},1,2], labels}}, {{input_ids: [3], labels}}]), pad override {pad_id}"
    out = backend.default_collater(batch)
    expected = {
        "input_ids": long([[p, 1, 2], [3, p, p]]),
        "labels": long([[1, 2, 3], [4, X, X]]),
        "padding_mask": bools([[T, F, F], [F, T, T]]),
    }
    assert_keys(out, list(expected), clause="dcoll-padding-mask", call=call)
    assert_batch_equal(out, expected, clause="dcoll-padding-mask", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-padding-mask", "dcoll-fields", "dcoll-pad-values")
def test_default_collater_no_padding_mask_without_ids_or_mask(backend):
    """Neither attention_mask nor input_ids: no padding_mask key."""
    out = backend.default_collater([{"labels": [1, 2]}, {"labels": [3]}])
    call = "default_collater([{labels: [1,2]}, {labels: [3]}])"
    assert_keys(out, ["labels"], clause="dcoll-padding-mask", call=call)
    assert_tensor_equal("labels", out["labels"], long([[1, 2], [3, X]]), clause="dcoll-pad-values", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
@pytest.mark.parametrize(
    ("divisible", "width"),
    [(None, 3), (1, 3), (3, 3), (4, 4), (5, 5), (8, 8)],
)
def test_default_collater_pad_seq_len_divisible(backend, divisible, width):
    """List fields are padded to the longest length rounded up to a multiple of the divisor."""
    batch = [{"input_ids": [1, 2, 3], "attention_mask": [1, 1, 1]}, {"input_ids": [4], "attention_mask": [1]}]
    call = f"default_collater(batch, {divisible})"
    out = backend.default_collater(batch, divisible)
    expected = {
        "input_ids": long([[1, 2, 3] + [0] * (width - 3), [4] + [0] * (width - 1)]),
        "attention_mask": long([[1, 1, 1] + [0] * (width - 3), [1] + [0] * (width - 1)]),
        "padding_mask": bools([[F, F, F] + [T] * (width - 3), [F] + [T] * (width - 1)]),
    }
    assert_keys(out, list(expected), clause="dcoll-fields", call=call)
    assert_batch_equal(out, expected, clause="dcoll-fields", call=call)
    batch = [{"input_ids": [1, 2, 3], "attention_mask": [1, 1, 1]}, {"input_ids": [4], "attention_mask": [1]}]
    out = backend.default_collater(batch, pad_seq_len_divisible=divisible)
    assert_batch_equal(
        out, expected, clause="dcoll-fields", call=f"default_collater(batch, pad_seq_len_divisible={divisible})"
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
def test_default_collater_tensor_fields_are_concatenated(backend):
    """Tensor values are concatenated along dim 0 with their dtype; a 1-D tensor counts as [1, N]."""
    batch = [
        {
            "input_ids": [1, 2],
            "pixel": torch.tensor([[1.5, 2.5]], dtype=torch.float64),
            "ids32": torch.tensor([1, 2, 3], dtype=torch.int32),
            "flags": torch.tensor([[[T, F]]]),
        },
        {
            "input_ids": [3],
            "pixel": torch.tensor([[3.5, 4.5], [5.5, 6.5]], dtype=torch.float64),
            "ids32": torch.tensor([4, 5, 6], dtype=torch.int32),
            "flags": torch.tensor([[[F, F]], [[T, T]]]),
        },
    ]
    call = "default_collater([{pixel f64 [1,2], ids32 int32 [3], flags bool [1,1,2]}, {pixel [2,2], ids32 [3], flags [2,1,2]}])"
    out = backend.default_collater(batch, 4)
    expected = {
        "input_ids": long([[1, 2, 0, 0], [3, 0, 0, 0]]),
        "pixel": torch.tensor([[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]], dtype=torch.float64),
        "ids32": torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32),
        "flags": torch.tensor([[[T, F]], [[F, F]], [[T, T]]]),
        "padding_mask": bools([[F, F, T, T], [F, T, T, T]]),
    }
    assert_keys(out, list(expected), clause="dcoll-fields", call=call)
    assert_batch_equal(out, expected, clause="dcoll-fields", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
def test_default_collater_tensor_input_ids(backend):
    """Pre-batched [1, S] tensor input_ids are concatenated and keep int32; padding_mask follows."""
    batch = [
        {"input_ids": torch.tensor([[5, 0, 6]], dtype=torch.int32)},
        {"input_ids": torch.tensor([[0, 7, 8]], dtype=torch.int32)},
    ]
    call = "default_collater([{input_ids: int32 [[5,0,6]]}, {input_ids: int32 [[0,7,8]]}])"
    out = backend.default_collater(batch)
    expected = {
        "input_ids": torch.tensor([[5, 0, 6], [0, 7, 8]], dtype=torch.int32),
        "padding_mask": bools([[F, T, F], [T, F, F]]),
    }
    assert_keys(out, list(expected), clause="dcoll-fields", call=call)
    assert_batch_equal(out, expected, clause="dcoll-fields", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
@pytest.mark.parametrize(
    ("values", "want", "dtype"),
    [
        ((3, 4), [3, 4], None),
        ((0.5, 1.5), [0.5, 1.5], None),
        ((np.int64(3), np.int64(4)), [3, 4], None),
        ((np.float32(0.5), np.float32(1.5)), [0.5, 1.5], None),
        ((torch.tensor(2, dtype=torch.int32), torch.tensor(5, dtype=torch.int32)), [2, 5], torch.int32),
        (
            (torch.tensor(0.25, dtype=torch.float64), torch.tensor(0.75, dtype=torch.float64)),
            [0.25, 0.75],
            torch.float64,
        ),
    ],
    ids=["int", "float", "np-int64", "np-float32", "0d-int32", "0d-float64"],
)
def test_default_collater_scalar_fields_are_stacked(backend, values, want, dtype):
    """Scalar values (Python, numpy or 0-D tensors) are stacked to [B]; 0-D tensors keep dtype."""
    batch = [{"input_ids": [1, 2], "score": values[0]}, {"input_ids": [3], "score": values[1]}]
    call = f"default_collater([{{score: {values[0]!r}}}, {{score: {values[1]!r}}}])"
    out = backend.default_collater(batch)
    assert_keys(out, ["input_ids", "score", "padding_mask"], clause="dcoll-fields", call=call)
    score = out["score"]
    if not isinstance(score, torch.Tensor) or tuple(score.shape) != (2,) or score.tolist() != want:
        raise AssertionError(f"score={score!r}, but should be a [2] tensor {want} [dcoll-fields: {call}]")
    if dtype is not None and score.dtype != dtype:
        raise AssertionError(f"score.dtype={score.dtype}, but should be {dtype} [dcoll-fields: {call}]")
    assert_tensor_equal("input_ids", out["input_ids"], long([[1, 2], [3, 0]]), clause="dcoll-fields", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
def test_default_collater_keys_come_from_item0(backend):
    """Keys are item 0's, in its order; a key only a later item has is ignored."""
    batch = [{"labels": [1], "input_ids": [2]}, {"labels": [3, 4], "input_ids": [5, 6], "extra": [7, 8]}]
    call = "default_collater([{labels, input_ids}, {labels, input_ids, extra}])"
    out = backend.default_collater(batch)
    expected = {
        "labels": long([[1, X], [3, 4]]),
        "input_ids": long([[2, 0], [5, 6]]),
        "padding_mask": bools([[F, T], [F, F]]),
    }
    assert_keys(out, list(expected), clause="dcoll-fields", call=call)
    assert_batch_equal(out, expected, clause="dcoll-fields", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
def test_default_collater_errors(backend):
    """An empty batch raises IndexError; a key missing from a later item raises KeyError."""
    assert_raises(IndexError, (), backend.default_collater, [], clause="dcoll-fields")
    batch = [{"input_ids": [1], "labels": [2]}, {"input_ids": [3]}]
    error = assert_raises(KeyError, (), backend.default_collater, batch, clause="dcoll-fields")
    assert error.args == ("labels",), f"KeyError{error.args!r}, but should be KeyError('labels') [dcoll-fields]"


# --- packed_sequence_thd_collater ------------------------------------------------------------


def prepacked_batch(extra: bool = False) -> list[dict]:
    """Two pre-packed items of length 6 with 2 and 3 sequences."""
    batch = [
        {
            "input_ids": [1, 2, 3, 99, 4, 5],
            "labels": [2, 3, X, X, 5, X],
            "position_ids": [0, 1, 2, 0, 0, 1],
            "seq_lens": [3, 2],
            "seq_lens_padded": [4, 2],
        },
        {
            "input_ids": [6, 7, 8, 9, 10, 11],
            "labels": [7, X, 9, X, 11, X],
            "position_ids": [0, 1, 0, 1, 0, 1],
            "seq_lens": [2, 2, 2],
            "seq_lens_padded": [2, 2, 2],
        },
    ]
    if extra:
        for item in batch:
            item["attention_mask"] = [1] * 6
            item["loss_mask"] = [1] * 6
            item[PAD] = {"input_ids": 0, "labels": X}
    return batch


PREPACKED = {
    "input_ids": long([[1, 2, 3, 99, 4, 5], [6, 7, 8, 9, 10, 11]]),
    "labels": long([[2, 3, X, X, 5, X], [7, X, 9, X, 11, X]]),
    "position_ids": long([[0, 1, 2, 0, 0, 1], [0, 1, 0, 1, 0, 1]]),
    "seq_lens": long([[3, 2, -1000], [2, 2, 2]]),
    "seq_lens_padded": long([[4, 2, -1000], [2, 2, 2]]),
    "qkv_format": "thd",
}


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-prepacked")
@pytest.mark.parametrize("extra", [False, True], ids=["plain", "extra-keys"])
def test_thd_collater_prepacked(backend, extra):
    """Pre-packed items are stacked; seq_lens pad with -1000; other keys are dropped."""
    call = (
        f"packed_sequence_thd_collater(two pre-packed items{', with attention_mask/loss_mask/' + PAD if extra else ''})"
    )
    out = backend.packed_sequence_thd_collater(prepacked_batch(extra))
    assert_keys(out, THD_KEYS, clause="thdcoll-prepacked", call=call)
    assert_batch_equal(out, PREPACKED, clause="thdcoll-prepacked", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-prepacked")
def test_thd_collater_prepacked_single_item(backend):
    """One pre-packed record (as collate_datums builds it) becomes [1, L] and [1, N]."""
    item = {
        "input_ids": [1, 2, 3],
        "labels": [2, X, 4],
        "position_ids": [0, 1, 0],
        "seq_lens": [2, 1],
        "seq_lens_padded": [2, 1],
    }
    call = "packed_sequence_thd_collater([one pre-packed record])"
    out = backend.packed_sequence_thd_collater([item])
    expected = {
        "input_ids": long([[1, 2, 3]]),
        "labels": long([[2, X, 4]]),
        "position_ids": long([[0, 1, 0]]),
        "seq_lens": long([[2, 1]]),
        "seq_lens_padded": long([[2, 1]]),
        "qkv_format": "thd",
    }
    assert_keys(out, THD_KEYS, clause="thdcoll-prepacked", call=call)
    assert_batch_equal(out, expected, clause="thdcoll-prepacked", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-prepacked")
def test_thd_collater_prepacked_different_lengths_raise(backend):
    """Pre-packed items of different lengths raise RuntimeError (they cannot be stacked)."""
    batch = prepacked_batch()
    for key in ("input_ids", "labels", "position_ids"):
        batch[1][key] = batch[1][key][:4]
    batch[1]["seq_lens"] = batch[1]["seq_lens_padded"] = [2, 2]
    assert_raises(RuntimeError, (), backend.packed_sequence_thd_collater, batch, clause="thdcoll-prepacked")


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-prepacked")
def test_thd_collater_empty_batch(backend):
    """An empty batch gives {}."""
    out = backend.packed_sequence_thd_collater([])
    assert out == {} and isinstance(out, dict), f"{out!r}, but should be {{}} [thdcoll-prepacked]"


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-synthesized")
def test_thd_collater_synthesizes_single_sequence_packs(backend):
    """Items without seq_lens: seq_lens from attention_mask, padded lengths max_len, labels -100."""
    batch = [
        {"input_ids": [1, 2, 3], "labels": [2, 3, 7], "attention_mask": [1, 1, 0]},
        {"input_ids": [4, 5], "labels": [5, 6]},
    ]
    call = "packed_sequence_thd_collater([{ids [1,2,3], labels [2,3,7], am [1,1,0]}, {ids [4,5], labels [5,6]}])"
    out = backend.packed_sequence_thd_collater(batch)
    expected = {
        "input_ids": long([[1, 2, 3], [4, 5, 0]]),
        "labels": long([[2, 3, 7], [5, 6, X]]),
        "position_ids": long([[0, 1, 2], [0, 1, 2]]),
        "seq_lens": long([[2], [2]]),
        "seq_lens_padded": long([[3], [3]]),
        "qkv_format": "thd",
    }
    assert_keys(out, THD_KEYS, clause="thdcoll-synthesized", call=call)
    assert_batch_equal(out, expected, clause="thdcoll-synthesized", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-synthesized", "thdcoll-prepacked")
def test_thd_collater_synthesized_pad_override(backend):
    """The input_ids pad comes from ___PAD_TOKEN_IDS___; labels are still padded with -100."""
    batch = [
        {"input_ids": [1], "labels": [2], PAD: {"input_ids": 9, "labels": -1}},
        {"input_ids": [3, 4, 5], "labels": [4, 5, 6], "attention_mask": [1, 1, 1], PAD: {"input_ids": 9, "labels": -1}},
    ]
    call = f"packed_sequence_thd_collater([{{ids [1], {PAD}: ids 9}}, {{ids [3,4,5], am [1,1,1]}}])"
    out = backend.packed_sequence_thd_collater(batch)
    expected = {
        "input_ids": long([[1, 9, 9], [3, 4, 5]]),
        "labels": long([[2, X, X], [4, 5, 6]]),
        "position_ids": long([[0, 1, 2], [0, 1, 2]]),
        "seq_lens": long([[1], [3]]),
        "seq_lens_padded": long([[3], [3]]),
        "qkv_format": "thd",
    }
    assert_keys(out, THD_KEYS, clause="thdcoll-synthesized", call=call)
    assert_batch_equal(out, expected, clause="thdcoll-synthesized", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-synthesized")
def test_thd_collater_synthesized_missing_labels_raises(backend):
    """Synthesis needs labels: an item without them raises KeyError."""
    batch = [{"input_ids": [1, 2], "attention_mask": [1, 1]}, {"input_ids": [3], "attention_mask": [1]}]
    assert_raises(KeyError, (), backend.packed_sequence_thd_collater, batch, clause="thdcoll-synthesized")


# --- pack_features_for_thd -----------------------------------------------------------------------


def features() -> list[dict]:
    return [
        {"input_ids": [1, 2, 3], "labels": [2, 3, 4], "attention_mask": [1, 1, 1]},
        {"input_ids": [5, 6]},
        {"input_ids": [7], "labels": [8]},
    ]


@pytest.mark.requires("collaters")
@pytest.mark.clause("pack-features")
@pytest.mark.parametrize("ignore_index", [None, -1, 0])
def test_pack_features_for_thd(backend, ignore_index):
    """Features join end to end; a feature without labels contributes ignore_index everywhere."""
    ii = X if ignore_index is None else ignore_index
    call = f"pack_features_for_thd(features, ignore_index={ii})"
    if ignore_index is None:
        out = backend.pack_features_for_thd(features())
    else:
        out = backend.pack_features_for_thd(features(), ignore_index=ignore_index)
    expected = {
        "input_ids": [1, 2, 3, 5, 6, 7],
        "labels": [2, 3, 4, ii, ii, 8],
        "position_ids": [0, 1, 2, 0, 1, 0],
        "seq_lens": [3, 2, 1],
        "seq_lens_padded": [3, 2, 1],
    }
    assert out == expected, f"{out!r}, but should be {expected!r} [pack-features: {call}]"
    for key, value in out.items():
        assert type(value) is list and all(type(x) is int for x in value), (
            f"{key}={value!r}, but should be a plain list of ints [pack-features: {call}]"
        )
    assert out["seq_lens_padded"] is not out["seq_lens"], (
        f"seq_lens_padded is the same list object as seq_lens, but should be a copy [pack-features: {call}]"
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("pack-features", "thdcoll-prepacked")
def test_pack_features_then_thd_collater(backend):
    """The packed record is a valid pre-packed item for packed_sequence_thd_collater."""
    out = backend.packed_sequence_thd_collater([backend.pack_features_for_thd(features())])
    expected = {
        "input_ids": long([[1, 2, 3, 5, 6, 7]]),
        "labels": long([[2, 3, 4, X, X, 8]]),
        "position_ids": long([[0, 1, 2, 0, 1, 0]]),
        "seq_lens": long([[3, 2, 1]]),
        "seq_lens_padded": long([[3, 2, 1]]),
        "qkv_format": "thd",
    }
    call = "packed_sequence_thd_collater([pack_features_for_thd(features)])"
    assert_keys(out, THD_KEYS, clause="thdcoll-prepacked", call=call)
    assert_batch_equal(out, expected, clause="pack-features", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("pack-features")
def test_pack_features_ignore_index_is_keyword_only(backend):
    """pack_features_for_thd(features, -1) (ignore_index positional) raises TypeError."""
    assert_raises(TypeError, (), backend.pack_features_for_thd, features(), -1, clause="pack-features")


@pytest.mark.requires("collaters")
@pytest.mark.clause("pack-errors")
@pytest.mark.parametrize(
    ("feats", "facts"),
    [
        ([], ()),  # upstream: "pack_features_for_thd requires at least one feature"
        ([{"input_ids": [1, 2]}, {"input_ids": []}], ()),  # upstream: "cannot pack an empty sequence"
        ([{"input_ids": [1, 2], "labels": [1]}], (1, 2)),
        ([{"input_ids": [1]}, {"input_ids": [1, 2, 3], "labels": [1, 2, 3, 4]}], (4, 3)),
    ],
    ids=["no-feature", "empty-sequence", "short-labels", "long-labels"],
)
def test_pack_features_errors(backend, feats, facts):
    """The three ValueErrors of pack_features_for_thd; a length mismatch names both lengths."""
    assert_raises(ValueError, facts, backend.pack_features_for_thd, feats, clause="pack-errors")
