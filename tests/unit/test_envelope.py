"""The suite's state-envelope library (``conformance/helpers/envelope.py``): the layout helpers read
what ``envelope`` writes, and each named corruption damages exactly the part its name says,
so the first [state-load-validates-first] check it fails is the one the state tests expect.
Built on a literal envelope; no backend is involved."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchspec.conformance.helpers.envelope import (
    BAD_ARGUMENTS,
    BODY_KEYS,
    CORRUPTIONS,
    DIGEST,
    HEADER,
    MAGIC,
    MUTATIONS,
    VERSION,
    body_length,
    body_of,
    canonical_json,
    corrupt,
    digest_matches,
    envelope,
    mutate,
    raw_body,
    version_of,
    with_version,
)

BODY = {
    "fingerprint": "ab" * 32,
    "state": {"cursor": [1, 2], "note": "é"},
    "topology": {"canonical_replicas": 1, "dp_degree": 1, "world_size": 1},
}
VALID = envelope(canonical_json(BODY))


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def _no_duplicates(pairs: list) -> dict:
    if len({key for key, _ in pairs}) != len(pairs):
        raise ValueError("duplicate key")
    return dict(pairs)


def first_failed_check(data: bytes) -> str | None:
    """The first envelope check of [state-load-validates-first] that ``data`` fails, written
    from SPEC.md independently of the library (None: the envelope checks pass)."""
    if len(data) < 8 or data[:8] != b"BSZSTATE":
        return "bad magic"
    if len(data) < 9 or data[8] != 1:
        return "unsupported version"
    if len(data) < 17 or len(data) != 17 + int.from_bytes(data[9:17], "big") + 32:
        return "truncated"
    if hashlib.sha256(data[:-32]).digest() != data[-32:]:
        return "checksum mismatch"
    try:
        body = json.loads(data[17:-32].decode("utf-8"), parse_constant=_not_json, object_pairs_hook=_no_duplicates)
    except ValueError:
        return "malformed body"
    topology = body.get("topology") if isinstance(body, dict) else None
    if (
        not isinstance(body, dict)
        or sorted(body) != ["fingerprint", "state", "topology"]
        or not isinstance(body["fingerprint"], str)
        or not isinstance(body["state"], dict)
        or not isinstance(topology, dict)
        or sorted(topology) != ["canonical_replicas", "dp_degree", "world_size"]
        or not all(type(v) is int and v >= 1 for v in topology.values())
    ):
        return "malformed body"
    return None


def test_the_layout_helpers_read_what_envelope_writes():
    raw = canonical_json(BODY)
    assert raw == b'{"fingerprint":"' + b"ab" * 32 + b'","state":{"cursor":[1,2],"note":"\\u00e9"},' + (
        b'"topology":{"canonical_replicas":1,"dp_degree":1,"world_size":1}}'
    )
    assert VALID[:8] == MAGIC == b"BSZSTATE" and HEADER == 17 and DIGEST == 32
    assert version_of(VALID) == VERSION == 1
    assert body_length(VALID) == len(raw) and VALID[9:17] == len(raw).to_bytes(8, "big")
    assert len(VALID) == HEADER + len(raw) + DIGEST
    assert raw_body(VALID) == raw and body_of(VALID) == BODY and sorted(BODY) == list(BODY_KEYS)
    assert digest_matches(VALID) and VALID[-32:] == hashlib.sha256(VALID[:-32]).digest()
    assert first_failed_check(VALID) is None
    assert with_version(VALID, 7)[8] == 7 and with_version(VALID, 7)[9:] == VALID[9:]


# (corruptions, the first check they fail); the golden state cases and test_checkpoint_validation rely on these
EXPECTED = {
    "bad_magic": "bad magic",
    "foreign": "bad magic",
    "short_foreign": "bad magic",
    "magic_only": "unsupported version",
    "version_0": "unsupported version",
    "version_2": "unsupported version",
    "drop_last_byte": "truncated",
    "cut_header": "truncated",
    "extra_byte": "truncated",
    "magic_less_one": "bad magic",
    "header_only": "truncated",
    "header_less_one": "truncated",
    "length_plus_one": "truncated",
    "length_minus_one": "truncated",
    "flip_body_byte": "checksum mismatch",
    "flip_digest_byte": "checksum mismatch",
    "resign": None,
    "body_not_json": "malformed body",
    "body_not_object": "malformed body",
    "body_only_state": "malformed body",
    "body_without_state": "malformed body",
    "topology_replicas_as_string": "malformed body",
    "body_extra_key": "malformed body",
    "topology_extra_key": "malformed body",
    "topology_world_size_0": "malformed body",
    "topology_dp_degree_0": "malformed body",
    "topology_replicas_0": "malformed body",
    "state_nan": "malformed body",
    "body_duplicate_key": "malformed body",
    "fingerprint_not_string": "malformed body",
    "state_not_object": "malformed body",
    "topology_not_object": "malformed body",
}


def test_every_corruption_has_an_expected_check():
    assert sorted(EXPECTED) == sorted(CORRUPTIONS)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_corruption_fails_the_check_its_name_says(name):
    damaged = CORRUPTIONS[name](VALID)
    assert first_failed_check(damaged) == EXPECTED[name], f"{name}: {damaged[:40]!r}..."
    if name != "resign":
        assert damaged != VALID


@pytest.mark.parametrize(
    "names, check",
    [
        (("version_2", "resign"), "unsupported version"),
        (("flip_body_byte", "resign"), "malformed body"),  # the flipped byte is the body's "{"
        (("body_not_json", "flip_digest_byte"), "checksum mismatch"),
        (("version_2", "bad_magic", "drop_last_byte"), "bad magic"),
        ((), None),
    ],
)
def test_corrupt_applies_corruptions_in_order(names, check):
    assert first_failed_check(corrupt(VALID, names)) == check


def test_body_edits_keep_the_version_and_write_canonical_json():
    for name in ("body_without_state", "topology_replicas_as_string", "topology_world_size_0"):
        damaged = CORRUPTIONS[name](with_version(VALID, 1))
        assert version_of(damaged) == 1 and digest_matches(damaged)
        assert raw_body(damaged) == canonical_json(body_of(damaged))


def test_bad_arguments_are_not_a_state_mapping_of_bytes():
    for name, argument in BAD_ARGUMENTS.items():
        well_formed = isinstance(argument, dict) and list(argument) == ["zephon"] and type(argument["zephon"]) is bytes
        assert well_formed == (name == "empty"), name


@pytest.mark.parametrize(
    "mutations, expected",
    [
        ([("flip", 1, 0x03)], b"aacd"),
        ([("flip", 6, 0x03)], b"aacd"),  # an offset wraps around the length + 1, then the length
        ([("truncate", 2)], b"ab"),
        ([("insert", 4, b"XY")], b"abcdXY"),
        ([("splice", 1, 2, b"Z")], b"aZd"),
        ([("truncate", 0), ("flip", 0, 1)], b""),  # nothing left to flip
        ([("insert", 0, b"-"), ("truncate", 3)], b"-ab"),
    ],
)
def test_mutate_applies_each_mutation_in_order(mutations, expected):
    assert mutate(b"abcd", mutations) == expected


@settings(max_examples=100, derandomize=True, database=None, deadline=None)
@given(st.lists(MUTATIONS, min_size=1, max_size=4))
def test_mutations_are_what_mutate_reads(mutations):
    assert isinstance(mutate(VALID, mutations), bytes)
