"""``build_packed_sequence_metadata``'s stored cases blame the key that differs (the slow part of
``tests/unit/test_golden_key_blame.py``: the reference runs every stored case once per key, the
int16-edge case among them).
"""

from __future__ import annotations

import pytest
from _golden_key_blame import _backend, _blamed, _bumped, _narrowed

from batchspec import reference
from batchspec.conformance.golden.key_blame import OUTPUT_CLAUSES, inside_precondition


@pytest.mark.parametrize("key", ["packed_token_indices", "cu_seqlens", "max_seqlen"])
def test_packed_metadata_blames_the_key(golden_cases, key):
    def build_packed_sequence_metadata(mask):
        out = dict(reference.build_packed_sequence_metadata(mask))
        out[key] = _bumped(out[key])
        return out

    backend = _backend(build_packed_sequence_metadata=build_packed_sequence_metadata)
    metadata = [c for c in golden_cases if c.function == "build_packed_sequence_metadata"]
    assert metadata, "# sanity: metadata cases"
    for case in metadata:
        clauses = OUTPUT_CLAUSES["build_packed_sequence_metadata"][key]
        if key == "cu_seqlens" and inside_precondition(case.inputs.get("mask")):
            # inside [unpad-precondition]'s order the route's own clause defines the spans (golden/key_blame.py)
            clauses = tuple(c for c in clauses if c != "unpad-precondition")
        assert _blamed(backend, case) == _narrowed(clauses, case), case.name
    dtype = _backend(
        build_packed_sequence_metadata=lambda m: {
            **reference.build_packed_sequence_metadata(m),
            "cu_seqlens": reference.build_packed_sequence_metadata(m)["cu_seqlens"].long(),
        }
    )
    assert _blamed(dtype, metadata[0]) == ("meta-cu-seqlens",)
