"""Hypothesis invariants of the packed metadata (SPEC.md, "2. Packed metadata"):
``build_packed_sequence_metadata`` and ``get_unpad_data`` on every drawn mask, each differing key
blamed on its own clauses.

Inputs come from ``batchspec.conformance.helpers.strategies``; expected values are computed in
plain Python (``batchspec.conformance.helpers.invariants``). The code under test is reached only
through the ``backend`` fixture.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.golden.blame import binary_mask, blame
from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import assert_tensor_equal, clause_failure
from batchspec.conformance.helpers.invariants import (
    expected_packed_metadata,
    expected_unpad_data,
)

# The clauses the metadata properties blame a differing key on (narrowing ``OUTPUT_CLAUSES``):
# the key's own clause, and for get_unpad_data's spans the route the whole mask takes.
META_BLAME = ("meta-indices", "meta-cu-seqlens", "meta-max-seqlen")
UNPAD_BLAME = ("unpad-binary", "unpad-indexed", "unpad-outputs")


def _assert_metadata_equal(function: str, out: dict, want: dict, mask: torch.Tensor, call: str) -> None:
    """Each key of ``want`` (tensors, then the Python ``int`` ``max_seqlen``) equals ``out``'s,
    a differing key blamed on its own clauses (``blame``: ``OUTPUT_CLAUSES`` of ``function``,
    narrowed to ``META_BLAME`` / ``UNPAD_BLAME``; get_unpad_data's ``cu_seqlens`` on the route
    ``mask`` takes)."""
    __tracebackhide__ = True
    cited = META_BLAME if function == "build_packed_sequence_metadata" else UNPAD_BLAME
    for key, value in want.items():
        got = out.get(key)
        clause = ", ".join(blame(function, key, got, value, cited, {"mask": mask}))
        if isinstance(value, torch.Tensor):
            assert_tensor_equal(key, got, value, clause=clause, call=call)
        elif type(got) is not int or got != value:
            raise clause_failure(
                f"{key}={got!r} ({type(got).__name__}), but should be int {value}", clause=clause, call=call
            )


@pytest.mark.clause("meta-indices", "meta-cu-seqlens", "meta-max-seqlen", "unpad-precondition")
@pytest.mark.requires("packed_metadata")
@given(data=st.data())
def test_packed_metadata_invariants(backend, data):
    """On every ``id_masks`` mask (ids at the int8 / int16 edges, rows of more than 127 ids,
    negative entries, binary rows beside indexed ones) the three keys equal
    ``expected_packed_metadata``'s, whose route is decided per row [meta-cu-seqlens] and which
    counts a negative entry as nonzero [unpad-precondition]; the mask is not modified."""
    mask = data.draw(cs.id_masks(), label="mask")
    call = f"build_packed_sequence_metadata(torch.tensor({mask.tolist()}, dtype={mask.dtype}))"
    original = mask.clone()
    want = expected_packed_metadata(mask.to(torch.int64).tolist())
    out = backend.build_packed_sequence_metadata(mask)
    _assert_metadata_equal("build_packed_sequence_metadata", out, want, original, call)
    assert_tensor_equal("mask (input, after the call)", mask, original, clause="meta-indices", call=call)


@pytest.mark.clause("unpad-binary", "unpad-indexed", "unpad-outputs", "unpad-precondition")
@pytest.mark.requires("unpad_data")
@given(data=st.data())
def test_unpad_data_invariants(backend, data):
    """On every ``id_masks`` mask the outputs equal ``expected_unpad_data``'s on the route the
    whole mask takes (binary when bool or its largest value is <= 1, so a row's negative
    entries count in its span; indexed otherwise, where only ids 1..max are spans), negative
    entries in ``indices`` [unpad-precondition]; ``cu_seqlens`` is blamed on that route, the
    rest on [unpad-outputs]."""
    mask = data.draw(cs.id_masks(), label="mask")
    call = f"get_unpad_data(torch.tensor({mask.tolist()}, dtype={mask.dtype}))"
    original = mask.clone()
    # the expected outputs come from the mask as drawn, before the backend sees it
    indices, cu_seqlens, max_seqlen = expected_unpad_data(mask.to(torch.int64).tolist(), binary=binary_mask(mask))
    out = backend.get_unpad_data(mask)
    if not isinstance(out, tuple) or len(out) != 3:
        raise clause_failure(
            f"get_unpad_data returned {type(out).__name__}, but should return a 3-tuple",
            clause="unpad-outputs",
            call=call,
        )
    want = {"indices": indices, "cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen}
    _assert_metadata_equal("get_unpad_data", dict(zip(want, out)), want, original, call)
