"""A golden case whose output differs in one key blames that key's clauses
(``conformance/golden/key_blame.py``), not every clause the case cites.

Each test runs stored cases through the golden runner against the reference with one output
key changed (a backend that gets exactly that key wrong), and checks the clauses the
``ClauseFailure`` carries.
"""

from __future__ import annotations

import pytest
from _golden_key_blame import _backend, _blamed, _bumped, _narrowed

from batchspec import reference
from batchspec.conformance.golden.key_blame import OUTPUT_CLAUSES, binary_mask, inside_precondition


@pytest.mark.parametrize("key", ["indices", "cu_seqlens", "max_seqlen"])
def test_get_unpad_data_blames_the_key_and_the_route(golden_cases, key):
    position = ("indices", "cu_seqlens", "max_seqlen").index(key)

    def get_unpad_data(mask):
        out = list(reference.get_unpad_data(mask))
        out[position] = _bumped(out[position])
        return tuple(out)

    backend = _backend(get_unpad_data=get_unpad_data)
    checked = {"binary": 0, "indexed": 0, "inside the precondition": 0, "outside the precondition": 0}
    for case in (c for c in golden_cases if c.function == "get_unpad_data"):
        route = "binary" if binary_mask(case.inputs["mask"]) else "indexed"
        if key == "cu_seqlens":  # [unpad-precondition] only for a mask outside its order
            outside = () if inside_precondition(case.inputs["mask"]) else ("unpad-precondition",)
            want = _narrowed((f"unpad-{route}", *outside), case)
            checked["outside the precondition" if outside else "inside the precondition"] += 1
        else:
            want = _narrowed(OUTPUT_CLAUSES["get_unpad_data"][key], case)
        assert _blamed(backend, case) == want, case.name
        checked[route] += 1
    if key != "cu_seqlens":
        checked["inside the precondition"] = checked["outside the precondition"] = 1
    assert all(checked.values()), f"# sanity: cases of both routes, inside and outside the precondition, got {checked}"


@pytest.mark.parametrize(
    ("mask", "inside"),
    [
        ([[1, 1, 3, 3]], True),  # gaps allowed
        ([[1, 0, 1, 2]], True),  # an interior zero allowed
        ([[1, 2, 0], [0, 0, 0]], True),
        ([[1, -1, 2, 2]], False),  # a negative entry
        ([[1, 2, 1]], False),  # id 1 split by id 2
        ([[2, 2, 1, 1, 1]], False),  # ids decreasing
        ([[0, 2, 0, 1]], False),  # decreasing across a zero
    ],
)
def test_inside_precondition_is_specs_note(mask, inside):
    import torch

    assert inside_precondition(torch.tensor(mask)) is inside
    assert inside_precondition(torch.tensor(mask) != 0) is True  # a bool mask always is


def test_packed_metadata_blames_unpad_precondition_only_outside_it():
    import torch

    from batchspec.conformance.golden.key_blame import blame

    cited = ("meta-cu-seqlens", "unpad-precondition")
    for mask, want in (([[1, 1, 3, 3]], ("meta-cu-seqlens",)), ([[1, 2, 1]], cited)):
        got = blame("build_packed_sequence_metadata", "cu_seqlens", None, None, cited, {"mask": torch.tensor(mask)})
        assert got == want, mask


def test_enable_xdoc_attention_blames_ids_positions_and_the_untouched_fields(golden_cases):
    xdoc = [c for c in golden_cases if c.function == "enable_xdoc_attention"]
    assert xdoc, "# sanity: xdoc cases"
    for key, clause in (("attention_document_ids", "xdoc-attention-ids"), ("position_ids", "xdoc-positions")):

        def enable_xdoc_attention(batch, contract, key=key):
            out = reference.enable_xdoc_attention(batch, contract)
            out[key] = _bumped(out[key])
            return out

        backend = _backend(enable_xdoc_attention=enable_xdoc_attention)
        pinned = [case for case in xdoc if key in case.expected]
        assert pinned, f"# sanity: xdoc cases that pin {key}"
        assert {_blamed(backend, case) for case in pinned} == {(clause,)}, key


def test_default_collater_tells_a_pad_value_from_a_field(golden_cases):
    def wrong_pad(batch, pad_seq_len_divisible=None):
        out = reference.default_collater(batch, pad_seq_len_divisible)
        lengths = [len(item["input_ids"]) for item in batch]
        for b, n in enumerate(lengths):
            out["input_ids"][b, n:] += 1  # every pad slot, no real token
        return out

    def wrong_token(batch, pad_seq_len_divisible=None):
        out = reference.default_collater(batch, pad_seq_len_divisible)
        out["input_ids"][0, 0] += 1
        return out

    collated = [
        c
        for c in golden_cases
        if c.function == "default_collater" and all(isinstance(i.get("input_ids"), list) for i in c.inputs["batch"])
    ]
    padded = [c for c in collated if len({len(i["input_ids"]) for i in c.inputs["batch"]}) > 1]
    assert padded, "# sanity: a case whose items need padding"
    assert {_blamed(_backend(default_collater=wrong_pad), c) for c in padded} == {("dcoll-pad-values",)}
    assert {_blamed(_backend(default_collater=wrong_token), c) for c in collated} == {("dcoll-fields",)}
