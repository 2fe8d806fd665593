"""The canonical collaters on live objects: ``default_collater``, ``packed_sequence_thd_collater``
and ``pack_features_for_thd`` (SPEC.md, "The canonical collaters"; Decisions D-6).

Every hand-written value of these collaters (pad values and overrides, padding masks,
``pad_seq_len_divisible``, tensor and scalar fields, pre-packed and synthesized THD items,
packed features, the errors) is a golden case of ``golden/cases/datum.py``, whose rules follow
upstream nemo-automodel 0.7.0's ``datasets/utils.py`` (docs/sources.md#nemo-automodel). Here:
what a stored case cannot express (numpy scalars, Python ints whose stacked dtype the SPEC
leaves to numpy, the exact type of returned values and exceptions, a keyword-only option
passed positionally, which returned list objects are distinct). [collaters-no-mutation] (D-6)
is checked in ``test_collaters_no_mutation.py``. The code under test is reached only through
the ``backend`` fixture.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance.helpers.asserts import assert_keys, assert_raises
from conformance.helpers.stored import stored_inputs, stored_options

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
        raise AssertionError(f"score={score!r}, but should be a [2] tensor {want} [dcoll-fields: {call}]")


@pytest.mark.requires("collaters")
@pytest.mark.clause("dcoll-fields")
def test_default_collater_keyerror_is_the_missing_key(backend):
    """A key of item 0 missing from a later item raises exactly KeyError(that key) (golden case
    test_default_collater_rejects_a_key_missing_from_a_later_item pins the type and the name)."""
    batch = stored_inputs("test_default_collater_rejects_a_key_missing_from_a_later_item")["batch"]
    error = assert_raises(KeyError, (), backend.default_collater, batch, clause="dcoll-fields")
    assert error.args == ("labels",), f"KeyError{error.args!r}, but should be KeyError('labels') [dcoll-fields]"


# --- packed_sequence_thd_collater ------------------------------------------------------------


@pytest.mark.requires("collaters")
@pytest.mark.clause("thdcoll-prepacked")
def test_thd_collater_of_an_empty_batch_is_a_dict(backend):
    """An empty batch gives a dict (golden case test_thd_collater_of_an_empty_batch: ``{}``)."""
    out = backend.packed_sequence_thd_collater(stored_inputs("test_thd_collater_of_an_empty_batch")["batch"])
    assert isinstance(out, dict), f"{out!r}, but should be a dict [thdcoll-prepacked]"


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
        assert type(value) is list and all(type(x) is int for x in value), (
            f"{key}={value!r}, but should be a plain list of ints [pack-features: {call}]"
        )
    assert out["seq_lens_padded"] is not out["seq_lens"], (
        f"seq_lens_padded is the same list object as seq_lens, but should be a copy [pack-features: {call}]"
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("pack-features")
def test_pack_features_ignore_index_is_keyword_only(backend):
    """pack_features_for_thd(features, -1) (ignore_index positional) raises TypeError."""
    features = stored_inputs("test_pack_features_three_features_ignore_index_default")["features"]
    assert_raises(TypeError, (), backend.pack_features_for_thd, features, -1, clause="pack-features")
