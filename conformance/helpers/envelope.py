"""The state envelope's layout and the suite's one library of state corruptions (SPEC.md,
[state-envelope], [state-load-validates-first], [state-load-errors]).

Layout: ``magic (8) | version (1) | body length L (8, big-endian unsigned) | body (L) |
sha256 of all that (32)``; the body is canonical JSON of ``{"fingerprint", "state",
"topology"}``. Every test that reads, builds or damages state bytes does it with the names
here (``batchspec.conformance.helpers.state_script`` for the golden state scripts,
``test_checkpoint_*.py``), so the layout is written down once.

- ``CORRUPTIONS``: named byte corruptions of a backend's own envelope (golden scripts write
  ``load:S:c1+c2``; ``corrupt`` applies several in order). Each follows the layout, so it works
  on any backend's bytes; ``foreign`` and ``short_foreign`` replace them with bytes that are
  not an envelope at all.
- ``BAD_ARGUMENTS``: named ``load_state_dict`` arguments that are not ``{"zephon": bytes}``
  (and ``empty``, ``{"zephon": b""}``).
- ``MUTATIONS`` / ``mutate``: random flips, truncations, insertions and splices, for
  properties that feed arbitrary damage.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections.abc import Callable, Iterable
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "BAD_ARGUMENTS",
    "BODY_KEYS",
    "CHECKS",
    "CORRUPTIONS",
    "DIGEST",
    "HEADER",
    "HEX64",
    "LENGTH",
    "MAGIC",
    "MUTATIONS",
    "VERSION",
    "body_length",
    "body_of",
    "canonical_json",
    "corrupt",
    "digest_matches",
    "envelope",
    "mutate",
    "raw_body",
    "sign",
    "version_of",
    "with_body_length",
    "with_version",
]

MAGIC = b"BSZSTATE"
VERSION = 1
LENGTH = struct.Struct(">Q")  # the body length L
HEADER = len(MAGIC) + 1 + LENGTH.size  # magic, version, body length: 17 bytes
DIGEST = 32  # sha256 of everything before it
BODY_KEYS = ("fingerprint", "state", "topology")
HEX64 = re.compile(r"\b[0-9a-f]{64}\b")  # a fingerprint: lowercase hex sha256
# [state-load-validates-first], in order.
CHECKS = (
    "bad magic",
    "unsupported version",
    "truncated",
    "checksum mismatch",
    "malformed body",
    "fingerprint mismatch",
    "canonical_replicas changed",
)


# --- reading and writing the layout ----------------------------------------------------------


def canonical_json(value: Any) -> bytes:
    """[state-envelope]'s canonical JSON, as ASCII bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def sign(head: bytes) -> bytes:
    """``head`` followed by its sha256 digest."""
    return head + hashlib.sha256(head).digest()


def envelope(body: bytes, version: int = VERSION) -> bytes:
    """magic | version | body length | body | sha256 of all that [state-envelope]."""
    return sign(MAGIC + bytes([version]) + LENGTH.pack(len(body)) + body)


def version_of(data: bytes) -> int:
    """The version byte (``IndexError`` when there is none)."""
    return data[len(MAGIC)]


def with_version(data: bytes, version: int) -> bytes:
    """``data`` with its version byte replaced (the digest is not recomputed)."""
    return data[: len(MAGIC)] + bytes([version]) + data[len(MAGIC) + 1 :]


def with_body_length(data: bytes, length: int) -> bytes:
    """``data`` with its header's body length L replaced (the digest is not recomputed)."""
    return data[: len(MAGIC) + 1] + LENGTH.pack(length) + data[HEADER:]


def body_length(data: bytes) -> int:
    """The header's body length L (``struct.error`` when the header is cut)."""
    (length,) = LENGTH.unpack(data[len(MAGIC) + 1 : HEADER])
    return length


def raw_body(data: bytes) -> bytes:
    """The bytes between the header and the digest."""
    return data[HEADER:-DIGEST]


def body_of(data: bytes) -> Any:
    """The body, parsed as JSON."""
    return json.loads(raw_body(data))


def digest_matches(data: bytes) -> bool:
    """Whether the last 32 bytes are the sha256 of everything before them."""
    return hashlib.sha256(data[:-DIGEST]).digest() == data[-DIGEST:]


# --- named corruptions -----------------------------------------------------------------------


def _edit_body(edit: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    """A corruption that edits the parsed body and writes a valid envelope around it again."""

    def corrupted(data: bytes) -> bytes:
        body = body_of(data)
        edit(body)
        return envelope(canonical_json(body), version_of(data))

    return corrupted


def _drop_state(body: dict) -> None:
    del body["state"]


def _string_replicas(body: dict) -> None:
    body["topology"]["canonical_replicas"] = str(body["topology"]["canonical_replicas"])


def _extra_body_key(body: dict) -> None:
    body["comment"] = "not part of the body"


def _extra_topology_key(body: dict) -> None:
    body["topology"]["tp_degree"] = 1


def _zero_world_size(body: dict) -> None:
    body["topology"]["world_size"] = 0


def _zero_dp_degree(body: dict) -> None:
    body["topology"]["dp_degree"] = 0


def _zero_replicas(body: dict) -> None:
    body["topology"]["canonical_replicas"] = 0


def _nan_in_state(body: dict) -> None:
    body["state"]["nan"] = float("nan")  # json.dumps writes it as NaN, which is not JSON


def _number_fingerprint(body: dict) -> None:
    body["fingerprint"] = 0


def _list_state(body: dict) -> None:
    body["state"] = []


def _list_topology(body: dict) -> None:
    body["topology"] = [body["topology"][key] for key in sorted(body["topology"])]


def _duplicate_fingerprint(data: bytes) -> bytes:
    """The body with its ``fingerprint`` key written twice, the same value both times: a parser
    that keeps the last duplicate would read a valid body."""
    raw = raw_body(data)
    again = b',"fingerprint":' + json.dumps(json.loads(raw)["fingerprint"]).encode("ascii")
    return envelope(raw[:-1] + again + b"}", version_of(data))


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "drop_last_byte": lambda d: d[:-1],
    "cut_header": lambda d: d[:10],
    "extra_byte": lambda d: d + b"\x00",
    "bad_magic": lambda d: b"X" + d[1:],
    "foreign": lambda d: b"\x01" * len(d),  # not an envelope; read as one, its "length" is 0x0101...
    "short_foreign": lambda d: b"PK\x03\x04",  # fewer than 8 bytes (a zip file's first 4)
    "magic_only": lambda d: MAGIC,
    "version_0": lambda d: with_version(d, 0),
    "version_2": lambda d: with_version(d, 2),
    "flip_body_byte": lambda d: d[:HEADER] + bytes([d[HEADER] ^ 0x01]) + d[HEADER + 1 :],
    "flip_digest_byte": lambda d: d[:-1] + bytes([d[-1] ^ 0x01]),
    "resign": lambda d: sign(d[:-DIGEST]),  # a correct digest for whatever precedes it
    # the lengths at their bounds: one byte short of the magic (fewer than 8 bytes: "bad magic");
    # a whole header and nothing after it, one byte short of a header ("truncated": fewer than
    # 17 bytes), and the header's L one more or one less than the body holds, re-signed (only L
    # is wrong: "truncated", not 17 + L + 32 bytes)
    "magic_less_one": lambda d: d[: len(MAGIC) - 1],
    "header_only": lambda d: d[:HEADER],
    "header_less_one": lambda d: d[: HEADER - 1],
    "length_plus_one": lambda d: sign(with_body_length(d, body_length(d) + 1)[:-DIGEST]),
    "length_minus_one": lambda d: sign(with_body_length(d, body_length(d) - 1)[:-DIGEST]),
    # valid length and digest, bad body:
    "body_not_json": lambda d: envelope(b"\xff not json {", version_of(d)),
    "body_not_object": lambda d: envelope(b"[]", version_of(d)),
    "body_only_state": lambda d: envelope(b'{"state": {}}', version_of(d)),  # no fingerprint, no topology
    "body_without_state": _edit_body(_drop_state),
    "topology_replicas_as_string": _edit_body(_string_replicas),
    "body_extra_key": _edit_body(_extra_body_key),
    "topology_extra_key": _edit_body(_extra_topology_key),
    "topology_world_size_0": _edit_body(_zero_world_size),
    # each topology integer one below its bound of 1 ([state-envelope]); the saved 1 is the bound itself
    "topology_dp_degree_0": _edit_body(_zero_dp_degree),
    "topology_replicas_0": _edit_body(_zero_replicas),
    "state_nan": _edit_body(_nan_in_state),
    "body_duplicate_key": _duplicate_fingerprint,
    "fingerprint_not_string": _edit_body(_number_fingerprint),
    "state_not_object": _edit_body(_list_state),
    "topology_not_object": _edit_body(_list_topology),
}


def corrupt(data: bytes, names: Iterable[str]) -> bytes:
    """``data`` after the ``CORRUPTIONS`` ``names``, applied in order."""
    for name in names:
        data = CORRUPTIONS[name](data)
    return data


BAD_ARGUMENTS: dict[str, Any] = {
    "empty": {"zephon": b""},
    "empty_mapping": {},
    "missing_key": {"other": b""},
    "list_of_pairs": [("zephon", b"")],
    "bytes": b"",
    "none": None,
    "str_value": {"zephon": "BSZSTATE"},
    "none_value": {"zephon": None},
    "bytearray_value": {"zephon": bytearray(b"BSZSTATE")},
}


# --- random damage ---------------------------------------------------------------------------

MUTATIONS = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("splice"), st.integers(0, 10**6), st.integers(0, 64), st.binary(max_size=16)),
)


def mutate(data: bytes, mutations: Iterable[tuple]) -> bytes:
    """``data`` after ``mutations`` (drawn from ``MUTATIONS``), in order; an offset wraps
    around the current length."""
    for mutation in mutations:
        kind, at = mutation[0], mutation[1] % (len(data) + 1)
        if kind == "flip" and data:
            at %= len(data)
            data = data[:at] + bytes([data[at] ^ mutation[2]]) + data[at + 1 :]
        elif kind == "truncate":
            data = data[:at]
        elif kind == "insert":
            data = data[:at] + mutation[2] + data[at:]
        elif kind == "splice":
            data = data[:at] + mutation[3] + data[at + mutation[2] :]
    return data
