"""Hypothesis invariants of the packed metadata (SPEC.md, "2. Packed metadata"):
``build_packed_sequence_metadata`` and ``get_unpad_data`` on every drawn mask, each differing key
blamed on its own clauses.

Inputs come from ``batchspec.conformance.helpers.strategies`` (``id_masks``, and ``block_masks``:
masks a GPU kernel covers with more than one block, issue 33); expected values are computed in
plain Python (``batchspec.conformance.helpers.invariants``). The code under test is reached only
through the ``backend`` fixture.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.golden.key_blame import binary_mask, blame
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
    _check_packed_metadata(
        backend, mask, f"build_packed_sequence_metadata(torch.tensor({mask.tolist()}, dtype={mask.dtype}))"
    )


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
    _check_unpad_data(backend, mask, f"get_unpad_data(torch.tensor({mask.tolist()}, dtype={mask.dtype}))")


@pytest.mark.clause("unpad-binary", "unpad-indexed", "unpad-outputs")
@pytest.mark.requires("unpad_data")
@given(data=st.data())
def test_unpad_data_past_one_gpu_block(backend, data):
    """On masks a kernel covers with more than one block (``block_masks``: rows one past a block
    of ``GPU_BLOCKS``, a span or padding boundary at a block edge, 1023 | 1024 most often; more
    than 1024 spans in all, in one or two rows or one per row of a batch of more than 1024 rows),
    inside [unpad-precondition]'s order, the outputs equal ``expected_unpad_data``'s on the
    route the whole mask takes; ``cu_seqlens`` is blamed on that route, the rest on
    [unpad-outputs]."""
    mask = data.draw(cs.block_masks(), label="mask")
    _check_unpad_data(backend, mask, f"get_unpad_data({cs.describe_mask(mask)})")


@pytest.mark.clause("meta-indices", "meta-cu-seqlens", "meta-max-seqlen")
@pytest.mark.requires("packed_metadata")
@given(data=st.data())
def test_packed_metadata_past_one_gpu_block(backend, data):
    """On ``block_masks`` masks (rows longer than one block with a boundary at a block edge, a
    row of more than 1024 spans, so ``cu_seqlens`` is wider than 1025, or more than 1024 rows)
    the three keys equal ``expected_packed_metadata``'s, each differing key blamed on its own
    clause; the mask is not modified."""
    mask = data.draw(cs.block_masks(), label="mask")
    _check_packed_metadata(backend, mask, f"build_packed_sequence_metadata({cs.describe_mask(mask)})")


def _check_packed_metadata(backend, mask, call: str) -> None:
    """``build_packed_sequence_metadata(mask)`` equals ``expected_packed_metadata``'s three keys,
    each differing key blamed on its own clause, and leaves ``mask`` as it was [meta-indices]."""
    original = mask.clone()
    want = expected_packed_metadata(mask.to(torch.int64).tolist())
    out = backend.build_packed_sequence_metadata(mask)
    _assert_metadata_equal("build_packed_sequence_metadata", out, want, original, call)
    assert_tensor_equal("mask (input, after the call)", mask, original, clause="meta-indices", call=call)


def _check_unpad_data(backend, mask, call: str) -> None:
    """``get_unpad_data(mask)`` is a 3-tuple [unpad-outputs] equal to ``expected_unpad_data``'s on
    the route the whole mask takes, computed from the mask as drawn, before the backend sees it."""
    original = mask.clone()
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
