"""The canonical collaters never modify what they are given: [collaters-no-mutation] (SPEC.md,
"``Datum`` and the canonical collaters", decision D-6).

Upstream nemo-automodel 0.7.0 pops ``___PAD_TOKEN_IDS___`` from its items and rewrites them in
THD synthesis mode, and its ``batchify`` reshapes a caller's ``[S]`` tensor to ``[1, S]`` in
place (issue #3933). Each check below snapshots everything a call receives (the batch list,
every item mapping and its key order, every list, every tensor's identity, dtype, shape,
stride, storage offset, data pointer and values; ``conformance.helpers.storage.input_state``), calls
the collater once, and compares. Items hold lists, 1-D ``[S]`` tensors and 2-D ``[1, S]`` /
``[B_i, D]`` tensors, with ``___PAD_TOKEN_IDS___`` in item 0. Inputs are written by hand (the
pre-packed items are read from their golden case, ``conformance.helpers.stored``); the code under test
is reached only through the ``backend`` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance.helpers.literals import IGNORE_INDEX
from conformance.helpers.storage import input_state, state_changes
from conformance.helpers.stored import stored_inputs

PAD = "___PAD_TOKEN_IDS___"
X = IGNORE_INDEX


def _t(values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


DEFAULT_COLLATER_INPUTS = {
    "lists": lambda: (
        [
            {
                "input_ids": [1, 2, 3],
                "labels": [2, 3, 4],
                "attention_mask": [1, 1, 1],
                "segment": [5, 5, 5],
                PAD: {"input_ids": 7, "labels": -1},
            },
            {"input_ids": [4], "labels": [5], "attention_mask": [1], "segment": [6]},
        ],
        (),
    ),
    "lists-divisible": lambda: (
        [
            {"input_ids": [1, 2, 3], "labels": [2, 3, 4], PAD: {"input_ids": 0}},
            {"input_ids": [4], "labels": [5]},
        ],
        (8,),
    ),
    "tensors-1d": lambda: (
        [
            {"input_ids": _t([1, 2, 3]), "attention_mask": _t([1, 1, 0]), "labels": [2, 3], PAD: {"labels": -1}},
            {"input_ids": _t([4, 5, 6]), "attention_mask": _t([1, 1, 1]), "labels": [5]},
        ],
        (),
    ),
    "tensors-2d": lambda: (
        [
            {
                "input_ids": _t([[1, 2, 3]]),
                "pixel_values": _t([[0.5, 1.5]], torch.float32),
                "labels": [2, 3, 4],
                PAD: {"input_ids": 9},
            },
            {
                "input_ids": _t([[4, 5, 6], [7, 8, 9]]),
                "pixel_values": _t([[2.5, 3.5], [4.5, 5.5]], torch.float32),
                "labels": [5],
            },
        ],
        (4,),
    ),
    "scalars": lambda: (
        [
            {"input_ids": [1, 2], "score": _t(0.5, torch.float32), "dataset_id": np.int64(3), PAD: {"input_ids": 0}},
            {"input_ids": [3], "score": _t(1.5, torch.float32), "dataset_id": np.int64(4)},
        ],
        (),
    ),
}


def _prepacked(as_tensors: bool):
    """Golden case test_thd_collater_prepacked_items_are_stacked's two pre-packed items, item 0
    with an attention_mask and the pad override too."""
    items = stored_inputs("test_thd_collater_prepacked_items_are_stacked")["batch"]
    items[0].update({"attention_mask": [1] * 6, PAD: {"input_ids": 0, "labels": X}})
    if as_tensors:
        for item in items:
            for key in ("input_ids", "labels", "position_ids", "attention_mask"):
                if key in item:
                    item[key] = _t(item[key])
    return items


def _unpacked(as_tensors: bool):
    def field(values):
        return _t(values) if as_tensors else list(values)

    return [
        {
            "input_ids": field([1, 2, 3]),
            "labels": field([2, 3, 7]),
            "attention_mask": field([1, 1, 0]),
            PAD: {"input_ids": 9, "labels": -1},
        },
        {"input_ids": field([4, 5]), "labels": field([5, 6])},
    ]


THD_COLLATER_INPUTS = {
    "prepacked-lists": lambda: _prepacked(False),
    "prepacked-tensors-1d": lambda: _prepacked(True),
    "synthesized-lists": lambda: _unpacked(False),
    "synthesized-tensors-1d": lambda: _unpacked(True),
}

PACK_FEATURES_INPUTS = {
    "lists": lambda: [
        {"input_ids": [1, 2, 3], "labels": [2, 3, 4], "attention_mask": [1, 1, 1], PAD: {"input_ids": 0}},
        {"input_ids": [5, 6]},
    ],
    "tensors-1d": lambda: [
        {"input_ids": _t([1, 2, 3]), "labels": _t([2, 3, 4]), PAD: {"input_ids": 0}},
        {"input_ids": _t([5, 6])},
        {"input_ids": [7], "labels": [8]},
    ],
}


def _assert_untouched(function, value, *args, call: str, **kwargs) -> None:
    """``function(value, *args, **kwargs)`` leaves everything reachable from ``value`` as it was."""
    __tracebackhide__ = True
    before = input_state(value, "batch")
    function(value, *args, **kwargs)
    changes = state_changes(before, input_state(value, "batch"))
    if changes:
        raise AssertionError(
            f"{call} modified its input, but should leave it untouched (D-6):\n  "
            + "\n  ".join(changes[:8])
            + f"\n[collaters-no-mutation: {call}]"
        )


@pytest.mark.requires("collaters")
@pytest.mark.clause("collaters-no-mutation")
@pytest.mark.parametrize("case", list(DEFAULT_COLLATER_INPUTS))
def test_default_collater_leaves_its_items_untouched(backend, case):
    """Item 0 keeps ___PAD_TOKEN_IDS___; no list grows; no [S] tensor becomes [1, S]."""
    batch, args = DEFAULT_COLLATER_INPUTS[case]()
    _assert_untouched(backend.default_collater, batch, *args, call=f"default_collater({case} items, *{args})")


@pytest.mark.requires("collaters")
@pytest.mark.clause("collaters-no-mutation")
@pytest.mark.parametrize("case", list(THD_COLLATER_INPUTS))
def test_packed_sequence_thd_collater_leaves_its_items_untouched(backend, case):
    """Pre-packed and synthesized items alike: no key is popped (___PAD_TOKEN_IDS___,
    attention_mask), none is added (seq_lens, position_ids), no field is padded in place."""
    batch = THD_COLLATER_INPUTS[case]()
    _assert_untouched(backend.packed_sequence_thd_collater, batch, call=f"packed_sequence_thd_collater({case} items)")


@pytest.mark.requires("collaters")
@pytest.mark.clause("collaters-no-mutation")
@pytest.mark.parametrize("case", list(PACK_FEATURES_INPUTS))
@pytest.mark.parametrize("ignore_index", [None, -1])
def test_pack_features_for_thd_leaves_its_features_untouched(backend, case, ignore_index):
    features = PACK_FEATURES_INPUTS[case]()
    kwargs = {} if ignore_index is None else {"ignore_index": ignore_index}
    _assert_untouched(
        backend.pack_features_for_thd, features, call=f"pack_features_for_thd({case} features, {kwargs})", **kwargs
    )
