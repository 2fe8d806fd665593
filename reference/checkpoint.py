"""The ``ZephonDataLoader`` state envelope: Zephon's checkpoint dict as checked bytes.

[state-envelope] The bytes ``state_dict()`` returns once iteration started are::

    MAGIC (8 bytes, b"BSZSTATE") | SCHEMA_VERSION (1 byte) | body length (8 bytes, big-endian
    unsigned) | body | sha256 (32 bytes) of everything before it

The body is canonical JSON (sorted keys, no spaces, ASCII) of ``{"fingerprint": str, "state":
<pipeline.checkpoint() dict>, "topology": {"world_size", "dp_degree", "canonical_replicas"}}``.
No pickle anywhere: decoding untrusted bytes never runs code.

[state-fingerprint] ``pipeline_fingerprint`` is a sha256 over a canonical description of the
pipeline's operator graph (op types in order and their plain configuration), independent of
runtime and topology options, so a state is never restored into a pipeline whose stream it
does not describe (Zephon itself would silently yield nothing).
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

__all__ = [
    "MAGIC",
    "SCHEMA_VERSION",
    "decode_state",
    "encode_state",
    "pipeline_fingerprint",
    "pipeline_topology",
]

MAGIC = b"BSZSTATE"
SCHEMA_VERSION = 1
_LENGTH = struct.Struct(">Q")
_HEADER_SIZE = len(MAGIC) + 1 + _LENGTH.size  # 17
_DIGEST_SIZE = hashlib.sha256().digest_size  # 32
# Nodes Zephon 0.2.0 adds to the graph itself at engine build (``<stage>_replay_filter``).
_ENGINE_INSERTED_OPS = frozenset({"ReplayFilter"})
_TOPOLOGY_KEYS = ("world_size", "dp_degree", "canonical_replicas")
# Tokenizer attributes that identify its vocabulary without naming a machine-local path.
_TOKENIZER_KEYS = ("name_or_path", "vocab_size", "bos_token_id", "eos_token_id", "pad_token_id")


def _canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def encode_state(state: dict, *, topology: dict, fingerprint: str) -> bytes:
    """Wrap Zephon's ``checkpoint()`` dict in the envelope [state-envelope].

    Raises:
        TypeError: ``state`` is not a dict, or it is not JSON-serialisable.
        ValueError: ``topology`` lacks an int ``world_size``/``dp_degree``/``canonical_replicas``.
    """
    if not isinstance(state, dict):
        raise TypeError(f"state must be the dict pipeline.checkpoint() returns, got {type(state).__name__}")
    if not isinstance(fingerprint, str):
        raise TypeError(f"fingerprint must be a str, got {type(fingerprint).__name__}")
    for key in _TOPOLOGY_KEYS:
        if not _is_int(topology.get(key)):
            raise ValueError(f"topology[{key!r}] must be an int, got {topology.get(key)!r}")
    body = _canonical_json(
        {"fingerprint": fingerprint, "state": state, "topology": {k: topology[k] for k in _TOPOLOGY_KEYS}}
    )
    head = MAGIC + bytes([SCHEMA_VERSION]) + _LENGTH.pack(len(body)) + body
    return head + hashlib.sha256(head).digest()


def decode_state(
    data: bytes, *, expected_fingerprint: str | None, expected_canonical_replicas: int | None
) -> dict:
    """Check the envelope and return the Zephon state dict [state-envelope,
    state-fingerprint, state-canonical-replicas].

    The checks run in this order; each raises ``ValueError`` whose message starts with its
    name: ``truncated``, ``bad magic``, ``unsupported version``, ``checksum mismatch``,
    ``malformed body``, ``fingerprint mismatch``, ``canonical_replicas changed``. ``None``
    skips the fingerprint or canonical_replicas comparison.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"state bytes must be bytes, got {type(data).__name__}")
    data = bytes(data)
    minimum = _HEADER_SIZE + _DIGEST_SIZE
    if len(data) < minimum:
        raise ValueError(f"truncated: state holds {len(data)} bytes, fewer than the {minimum}-byte header and digest")
    (body_length,) = _LENGTH.unpack_from(data, len(MAGIC) + 1)
    if len(data) != minimum + body_length:
        raise ValueError(
            f"truncated: header says the body holds {body_length} bytes, so the state should hold "
            f"{minimum + body_length} bytes, but it holds {len(data)}"
        )
    if data[: len(MAGIC)] != MAGIC:
        raise ValueError(f"bad magic: state starts with {data[: len(MAGIC)]!r}, but should start with {MAGIC!r}")
    version = data[len(MAGIC)]
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"unsupported version: state schema version {version} is newer than the supported version {SCHEMA_VERSION}"
        )
    head, digest = data[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
    if hashlib.sha256(head).digest() != digest:
        raise ValueError("checksum mismatch: the sha256 digest does not match the state's contents")
    body = _parse_body(head[_HEADER_SIZE:])
    fingerprint = body["fingerprint"]
    if expected_fingerprint is not None and fingerprint != expected_fingerprint:
        raise ValueError(
            f"fingerprint mismatch: the state was saved by a pipeline with fingerprint {fingerprint}, "
            f"but this pipeline's fingerprint is {expected_fingerprint}"
        )
    saved_replicas = body["topology"]["canonical_replicas"]
    if expected_canonical_replicas is not None and saved_replicas != expected_canonical_replicas:
        raise ValueError(
            f"canonical_replicas changed: the state was saved with canonical_replicas={saved_replicas}, "
            f"but this pipeline has canonical_replicas={expected_canonical_replicas}"
        )
    return body["state"]


def _parse_body(raw: bytes) -> dict:
    """The body's JSON object, with every key present and typed [state-envelope]."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValueError(f"malformed body: not UTF-8 JSON ({type(error).__name__}: {error})") from None
    if not isinstance(body, dict):
        raise ValueError(f"malformed body: must be a JSON object, got {type(body).__name__}")  # noqa: TRY004 - SPEC: ValueError
    missing = [key for key in ("fingerprint", "state", "topology") if key not in body]
    if missing:
        raise ValueError(f"malformed body: missing keys {missing}")
    if not isinstance(body["fingerprint"], str):
        raise ValueError(f"malformed body: fingerprint must be a string, got {type(body['fingerprint']).__name__}")  # noqa: TRY004 - SPEC: ValueError
    if not isinstance(body["state"], dict):
        raise ValueError(f"malformed body: state must be an object, got {type(body['state']).__name__}")  # noqa: TRY004 - SPEC: ValueError
    topology = body["topology"]
    if not isinstance(topology, dict):
        raise ValueError(f"malformed body: topology must be an object, got {type(topology).__name__}")  # noqa: TRY004 - SPEC: ValueError
    for key in _TOPOLOGY_KEYS:
        if not _is_int(topology.get(key)):
            raise ValueError(f"malformed body: topology.{key} must be an integer, got {topology.get(key)!r}")
    return body


def pipeline_topology(pipeline: Any) -> dict:
    """``world_size``, ``dp_degree`` (default ``world_size``) and ``canonical_replicas``
    (default ``dp_degree``) from the pipeline's runtime options [state-canonical-replicas]."""
    options = getattr(pipeline, "_options", None)
    world_size = getattr(options, "world_size", None) or 1
    dp_degree = getattr(options, "dp_degree", None) or world_size
    canonical_replicas = getattr(options, "canonical_replicas", None) or dp_degree
    return {"world_size": int(world_size), "dp_degree": int(dp_degree), "canonical_replicas": int(canonical_replicas)}


def _describe_value(value: Any) -> Any:
    """A process-independent description of one op attribute, or ``None`` to leave it out.

    Plain scalars as themselves, sequences and string-keyed mappings of them recursively,
    functions and classes by their qualified name, a tokenizer by its name and vocabulary.
    Never ``id()``, ``hash()``, ``repr()`` or a memory address.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_describe_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _describe_value(item) for key, item in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted((_describe_value(item) for item in value), key=repr)
    if callable(value) and hasattr(value, "__qualname__"):  # functions, lambdas, classes
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    described = {"type": f"{type(value).__module__}.{type(value).__qualname__}"}
    for key in _TOKENIZER_KEYS:
        try:
            attribute = getattr(value, key, None)
        except Exception:  # noqa: BLE001 - a property that cannot be read describes nothing
            attribute = None
        if isinstance(attribute, (bool, int, float, str)):
            described[key] = attribute
    return described


def _describe_op(op: Any) -> dict:
    """An op's type and its public configuration (attributes not starting with ``_``)."""
    config = {}
    for key, value in sorted(vars(op).items()):
        if key.startswith("_") or key == "stage_info":  # private caches / runtime stage numbering
            continue
        config[key] = _describe_value(value)
    return {"type": f"{type(op).__module__}.{type(op).__qualname__}", "config": config}


def pipeline_fingerprint(pipeline: Any) -> str:
    """sha256 hex of the pipeline's operator graph [state-fingerprint].

    The description lists every node of ``pipeline._graph.nodes`` in order (Zephon 0.2.0),
    skipping the optional ``prefetch`` node (a runtime knob) and the ``ReplayFilter`` nodes
    Zephon's engine inserts into the graph when it is built: its name, op type and the op's
    public configuration, e.g. ``PackSequences.max_length``/``algorithm``,
    ``Batch.microbatch_size``, ``TokenizeText.max_length``/``special_tokens`` and the
    tokenizer's type, ``name_or_path`` and ``vocab_size``. Runtime and topology options
    (runner, prefetch, world size, ranks, ``canonical_replicas``) are not part of it.
    A pipeline without a graph is described by its type alone.
    """
    graph = getattr(pipeline, "_graph", None)
    nodes = getattr(graph, "nodes", None)
    if nodes is None:
        description: Any = {"pipeline": f"{type(pipeline).__module__}.{type(pipeline).__qualname__}"}
    else:
        description = [
            {"node": node.name, **_describe_op(node.op)}
            for node in nodes
            if node.name != "prefetch" and type(node.op).__name__ not in _ENGINE_INSERTED_OPS
        ]
    return hashlib.sha256(_canonical_json(description)).hexdigest()
