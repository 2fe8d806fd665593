"""Packed metadata (SPEC.md, "2. Packed metadata"): ``get_unpad_data`` and
``build_packed_sequence_metadata`` on masks of every admitted dtype.

[unpad-binary] admits "a bool mask, or an integer mask", so uint8, int8 and int16 masks
(``narrow_masks``) give exactly the outputs ``expected_unpad_data`` / ``expected_packed_metadata``
compute from their values. A differing key is blamed on its own clauses (``OUTPUT_CLAUSES``, via
``blame``): ``get_unpad_data``'s ``cu_seqlens`` on the route the mask takes, [unpad-precondition]
only for a mask outside the id order of its note. An exception on a valid mask is blamed on the
function's error clause (SPEC.md, "Conformance", "Raising on a valid input"): [unpad-errors],
[meta-errors].

The other checks of the section: the stored golden cases (``golden/cases/metadata.py``,
run by test_goldens.py) and the hypothesis properties (properties/test_metadata_invariants.py);
the metadata functions' [tb-device], [tb-no-aliasing] and [tb-layout] checks are
test_batch_fields.py's and test_layouts.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.golden.key_blame import binary_mask, blame
from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import assert_tensor_equal, call_valid, clause_failure
from batchspec.conformance.helpers.invariants import expected_packed_metadata, expected_unpad_data

NARROW_MASK_DTYPES = (torch.uint8, torch.int8, torch.int16)


# --- masks of the narrow integer dtypes --------------------------------------


@st.composite
def narrow_masks(draw) -> torch.Tensor:
    """An ``id_masks`` mask as uint8, int8 or int16, the dtype drawn first so that each comes as
    often whatever the mask holds (a uint8 mask takes the absolute values, so ids above 1 reach
    uint8 as often as the other dtypes); values clamped into the dtype's range (a clamped value
    keeps its sign, so the mask keeps a nonzero entry); a bool mask is taken as its 0/1 values.
    Every row's nonzero count fits the dtype (rows are cut to the dtype's largest value in
    columns when a longer row does not): upstream counts spans in the mask's dtype, so a longer
    span wraps there, and SPEC's clauses (exact counts) and its section 2 (upstream's outputs
    exactly) disagree on that; this check leaves it out."""
    mask = draw(cs.id_masks(), label="mask").to(torch.int64)
    dtype = draw(st.sampled_from(NARROW_MASK_DTYPES), label="dtype")
    info = torch.iinfo(dtype)
    if dtype == torch.uint8:
        mask = mask.abs()
    if int((mask != 0).sum(dim=1).max()) > info.max:
        mask = mask[:, : info.max].clone()
        if not bool(mask.any()):
            mask[0, 0] = 1
    return mask.clamp(info.min, info.max).to(dtype)


def in_id_order(mask: torch.Tensor) -> bool:
    """Whether ``mask`` keeps the id order of [unpad-precondition]'s note: values >= 0 and, along
    each row with its zeros removed, non-decreasing."""
    for row in mask.to(torch.int64).tolist():
        ids = [v for v in row if v != 0]
        if any(v < 0 for v in ids) or any(a > b for a, b in zip(ids, ids[1:])):
            return False
    return True


def _clauses(function: str, key: str, got: Any, want: Any, cited: Sequence[str], mask: torch.Tensor) -> str:
    """``blame``'s clauses for ``key``, without [unpad-precondition] for a mask inside its id order."""
    clauses = blame(function, key, got, want, cited, {"mask": mask})
    if in_id_order(mask):
        clauses = tuple(c for c in clauses if c != "unpad-precondition") or clauses
    return ", ".join(clauses)


def assert_outputs(function: str, out: Mapping[str, Any], want: Mapping[str, Any], mask, cited, call: str) -> None:
    """Every key of ``want`` equals ``out``'s (tensors exactly, ``max_seqlen`` a Python ``int``),
    a differing key blamed on its own clauses."""
    __tracebackhide__ = True
    for key, value in want.items():
        got = out.get(key)
        clause = _clauses(function, key, got, value, cited, mask)
        if isinstance(value, torch.Tensor):
            assert_tensor_equal(key, got, value, clause=clause, call=call)
        elif type(got) is not int or got != value:
            raise clause_failure(
                f"{key}={got!r} ({type(got).__name__}), but should be int {value}", clause=clause, call=call
            )


UNPAD_CLAUSES = ("unpad-binary", "unpad-indexed", "unpad-outputs", "unpad-precondition")
META_CLAUSES = ("meta-indices", "meta-cu-seqlens", "meta-max-seqlen", "unpad-precondition")


@pytest.mark.requires("unpad_data")
@pytest.mark.clause("unpad-binary", "unpad-indexed", "unpad-outputs", "unpad-precondition", "unpad-errors")
@given(data=st.data())
def test_get_unpad_data_on_uint8_int8_int16_masks(backend, data):
    mask = data.draw(narrow_masks(), label="mask")
    call = f"get_unpad_data(torch.tensor({mask.tolist()}, dtype={mask.dtype}))"
    binary = binary_mask(mask)
    want = dict(zip(("indices", "cu_seqlens", "max_seqlen"), expected_unpad_data(mask.tolist(), binary=binary)))
    out = call_valid(backend.get_unpad_data, mask, clause="unpad-errors", call=call)
    if not isinstance(out, tuple) or len(out) != 3:
        raise clause_failure(
            f"get_unpad_data returned {type(out).__name__}, but should return a 3-tuple",
            clause="unpad-outputs",
            call=call,
        )
    assert_outputs("get_unpad_data", dict(zip(want, out)), want, mask, UNPAD_CLAUSES, call)


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("meta-indices", "meta-cu-seqlens", "meta-max-seqlen", "unpad-precondition", "meta-errors")
@given(data=st.data())
def test_build_packed_sequence_metadata_on_uint8_int8_int16_masks(backend, data):
    mask = data.draw(narrow_masks(), label="mask")
    call = f"build_packed_sequence_metadata(torch.tensor({mask.tolist()}, dtype={mask.dtype}))"
    want = expected_packed_metadata(mask.tolist())
    out = call_valid(backend.build_packed_sequence_metadata, mask, clause="meta-errors", call=call)
    if not isinstance(out, Mapping):
        raise clause_failure(
            f"returned {type(out).__name__}, but should return a mapping", clause="meta-indices", call=call
        )
    assert_outputs("build_packed_sequence_metadata", out, want, mask, META_CLAUSES, call)
