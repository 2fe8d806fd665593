"""The canonical collaters on live objects: ``default_collater``, ``packed_sequence_thd_collater``
and ``pack_features_for_thd`` (SPEC.md, "The canonical collaters"; Decisions D-6).

Every hand-written value of these collaters (pad values and overrides, padding masks,
``pad_seq_len_divisible``, tensor and scalar fields, pre-packed and synthesized THD items,
packed features, the errors) is a golden case of ``golden/cases/collaters.py``, whose rules follow
upstream nemo-automodel 0.7.0's ``datasets/utils.py`` (docs/sources.md#nemo-automodel). Here:
what a stored case cannot express (numpy scalars, Python ints whose stacked dtype the SPEC
leaves to numpy, Python bools, for which SPEC rules out one answer and leaves the rest open, the
exact type of returned values and exceptions, a keyword-only option passed positionally, which
returned list objects are distinct). [collaters-no-mutation] (D-6)
is checked at the end of this module. The code under test is reached only through
the ``backend`` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from batchspec.conformance.golden.case_values import stored_expected, stored_inputs, stored_options
from batchspec.conformance.helpers.asserts import assert_keys, assert_raises, check, clause_failure
from batchspec.conformance.helpers.literals import IGNORE_INDEX, PAD_TOKEN_IDS_KEY
from batchspec.conformance.helpers.storage import input_state, listed_changes, state_changes

# --- default_collater ---------------------------------------------------------------------------


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
@pytest.mark.parametrize(
    ("values", "want"),
    [((3, 4), [3, 4]), ((np.int64(3), np.int64(4)), [3, 4]), ((np.float32(0.5), np.float32(1.5)), [0.5, 1.5])],
    ids=["int", "np-int64", "np-float32"],
)
def test_default_collater_scalar_fields_are_stacked(backend, values, want):
    """Python and numpy scalars are stacked to [B] through numpy, whose dtype the SPEC does not
    pin for them (Python floats and 0-D tensors, and the padded input_ids beside them: golden
    cases test_default_collater_scalar_fields_are_stacked_*)."""
    batch = [{"input_ids": [1, 2], "score": values[0]}, {"input_ids": [3], "score": values[1]}]
    call = f"default_collater([{{score: {values[0]!r}}}, {{score: {values[1]!r}}}])"
    out = backend.default_collater(batch)
    assert_keys(out, ["input_ids", "score", "padding_mask"], clause="dcoll-fields", call=call)
    score = out["score"]
    if not isinstance(score, torch.Tensor) or tuple(score.shape) != (2,) or score.tolist() != want:
        raise clause_failure(f"score={score!r}, but should be a [2] tensor {want}", clause="dcoll-fields", call=call)


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
def test_default_collater_never_stacks_bools_as_scalars(backend):
    """``bool`` values are not scalars (a Python ``bool`` is an ``int``, so a scalar test that
    forgets it stacks them to ``[B]``). They take the list path, where SPEC names no outcome for
    a value that is not a list (the reference and upstream raise): raising is allowed, and a
    ``[B]`` stack of them is the one answer the clause rules out."""
    batch = [{"input_ids": [1, 2], "flag": True}, {"input_ids": [3], "flag": False}]
    call = "default_collater([{flag: True}, {flag: False}])"
    try:
        out = backend.default_collater(batch)
    except Exception:  # any error: SPEC leaves the list path's errors open here
        return
    flag = out.get("flag") if isinstance(out, dict) else None
    if isinstance(flag, torch.Tensor) and tuple(flag.shape) == (2,):
        raise clause_failure(
            f"flag={flag!r}: bools stacked to [2] as scalars, but bool is not a scalar",
            clause="dcoll-fields",
            call=call,
        )


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
def test_default_collater_keyerror_is_the_missing_key(backend):
    """A key of item 0 missing from a later item raises exactly KeyError(that key) (golden case
    test_default_collater_rejects_a_key_missing_from_a_later_item pins the type and the name)."""
    batch = stored_inputs("test_default_collater_rejects_a_key_missing_from_a_later_item")["batch"]
    error = assert_raises(KeyError, (), backend.default_collater, batch, clause="dcoll-fields")
    check(
        error.args == ("labels",),
        f"KeyError{error.args!r}, but should be KeyError('labels')",
        clause="dcoll-fields",
    )


# --- packed_sequence_thd_collater ------------------------------------------------------------


DIVISIBLE_NONE = "test_default_collater_pad_seq_len_divisible_None"


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-divisible-zero")
@pytest.mark.parametrize("keyword", [False, True], ids=["positional", "keyword"])
def test_default_collater_divisible_zero_is_no_rounding(backend, keyword):
    """``pad_seq_len_divisible=0`` (no length is a multiple of 0) is read as ``None``: lists are
    padded to the longest length, 3, and nothing is raised (SHOULD, SPEC 1.5). The divisors 1
    and -1, which [dcoll-fields] itself fixes at the longest length, are golden cases
    (``test_default_collater_pad_seq_len_divisible_1``, ``..._minus_1``)."""
    # the golden case with None: lists [1, 2, 3] and [4], the longest length 3
    batch = stored_inputs(DIVISIBLE_NONE)["batch"]
    try:
        out = (
            backend.default_collater(batch, pad_seq_len_divisible=0) if keyword else backend.default_collater(batch, 0)
        )
    except Exception as error:
        raise clause_failure(
            f"pad_seq_len_divisible=0 raised {type(error).__name__}({str(error)[:200]}), but should pad to the "
            "longest length as None does",
            clause="dcoll-divisible-zero",
        ) from error
    want = stored_expected(DIVISIBLE_NONE)
    got = {key: out.get(key) for key in want}
    check(
        all(isinstance(got[key], torch.Tensor) and torch.equal(got[key], want[key]) for key in want),
        f"pad_seq_len_divisible=0 gave {got}, but should give what None gives, the longest length's padding {want}",
        clause="dcoll-divisible-zero",
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-prepacked")
def test_thd_collater_of_an_empty_batch_is_a_dict(backend):
    """An empty batch gives a dict (golden case test_thd_collater_of_an_empty_batch: ``{}``)."""
    out = backend.packed_sequence_thd_collater(stored_inputs("test_thd_collater_of_an_empty_batch")["batch"])
    check(isinstance(out, dict), f"{out!r}, but should be a dict", clause="thdcoll-prepacked")


# --- pack_features_for_thd -----------------------------------------------------------------------

PACK_CASES = [f"test_pack_features_three_features_ignore_index_{ii}" for ii in ("default", -1, 0)]


@pytest.mark.requires("collaters")
@pytest.mark.clause("pack-features")
@pytest.mark.parametrize("name", PACK_CASES)
def test_pack_features_for_thd_gives_plain_lists_of_their_own(backend, name):
    """Every value is a list of Python ints, and seq_lens_padded is a list of its own, not
    seq_lens itself (the values: golden case ``name``)."""
    options = stored_options(name)
    out = backend.pack_features_for_thd(stored_inputs(name)["features"], **options)
    call = f"golden case {name}: pack_features_for_thd(features, **{options})"
    for key, value in out.items():
        check(
            type(value) is list and all(type(x) is int for x in value),
            f"{key}={value!r}, but should be a plain list of ints",
            clause="pack-features",
            call=call,
        )
    check(
        out["seq_lens_padded"] is not out["seq_lens"],
        "seq_lens_padded is the same list object as seq_lens, but should be a copy",
        clause="pack-features",
        call=call,
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("pack-features")
def test_pack_features_ignore_index_is_keyword_only(backend):
    """pack_features_for_thd(features, -1) (ignore_index positional) raises TypeError."""
    features = stored_inputs("test_pack_features_three_features_ignore_index_default")["features"]
    assert_raises(TypeError, (), backend.pack_features_for_thd, features, -1, clause="pack-features")


# --- The canonical collaters never modify what they are given: [collaters-no-mutation] (SPEC.md, ----


PAD = PAD_TOKEN_IDS_KEY
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
        raise clause_failure(
            f"{call} modified its input, but should leave it untouched (D-6)",
            clause="collaters-no-mutation",
            call=call,
            details=listed_changes(changes),
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
