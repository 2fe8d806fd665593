"""The ``ZephonDataLoader`` state envelope and the pipeline fingerprint.

Envelope [state-envelope]. The bytes ``state_dict()`` returns once iteration started are::

    MAGIC (8 bytes, b"BSZSTATE") | version (1 byte, 1) | L = body length (8 bytes, big-endian
    unsigned) | body (L bytes) | sha256 (32 bytes) of everything before it

The body is canonical JSON (sorted keys, separators ``(",", ":")``, ASCII) of exactly
``{"fingerprint": str, "state": <pipeline.checkpoint() dict>, "topology": {"world_size",
"dp_degree", "canonical_replicas"}}``. No pickle anywhere: decoding untrusted bytes never runs
code.

Decoding [state-load-validates-first] runs these checks in this order; the first that fails
raises ``ValueError`` whose message starts with its name:

1. ``bad magic``: fewer than 8 bytes, or the first 8 bytes are not ``MAGIC``.
2. ``unsupported version``: no 9th byte, or the 9th byte is not 1.
3. ``truncated``: fewer than the 17 header bytes, or a total length other than
   17 + L + 32 (extra bytes count too: a length that disagrees with the header).
4. ``checksum mismatch``: the last 32 bytes are not the sha256 of everything before them.
5. ``malformed body``: the body is not UTF-8 JSON (no NaN/Infinity, no duplicate keys), not an
   object with exactly the keys ``fingerprint`` (a string), ``state`` (an object) and
   ``topology`` (an object with exactly ``world_size``, ``dp_degree``, ``canonical_replicas``,
   each an integer >= 1); or its ``state`` is not shaped like the checkpoint the pipeline
   writes (``batchspec.reference.checkpoint_body``) [state-body-valid].
6. ``fingerprint mismatch``: the body's fingerprint is not the loader's [state-fingerprint].
7. ``canonical_replicas changed``: [state-canonical-replicas].

Fingerprint [state-fingerprint-canonical]. The lowercase hex sha256 of the canonical JSON of
the pipeline's description ``{"batchspec_fingerprint": 1, "stages": [...]}``, one
``{"op": <zephon.Pipeline method>, ...settings}`` per stage; see ``pipeline_description``.
Zephon 0.2.0 has no public API that lists a pipeline's stages and settings, so this module
reads them from its private graph (``pipeline._graph.nodes``). That is an implementation
detail of the reference: the description itself holds only method names and plain settings,
never module paths, reprs or private names.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import struct
from typing import Any, TypeGuard

from batchspec.reference.checkpoint_body import check_state_structure

__all__ = [
    "MAGIC",
    "SCHEMA_VERSION",
    "canonical_json",
    "decode_state",
    "encode_state",
    "pipeline_description",
    "pipeline_fingerprint",
    "pipeline_topology",
]

MAGIC = b"BSZSTATE"
SCHEMA_VERSION = 1
_LENGTH = struct.Struct(">Q")
_HEADER_SIZE = len(MAGIC) + 1 + _LENGTH.size  # 17: magic, version, body length
_DIGEST_SIZE = hashlib.sha256().digest_size  # 32
_BODY_KEYS = ("fingerprint", "state", "topology")
_TOPOLOGY_KEYS = ("world_size", "dp_degree", "canonical_replicas")


def canonical_json(value: Any) -> bytes:
    """Canonical JSON [state-envelope]: sorted keys, no whitespace, ASCII only.

    Raises:
        ValueError: ``value`` holds NaN or an infinity, which JSON cannot write (and
            ``decode_state`` would reject as a malformed body).
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# ------------------------------------------------------------------------- envelope ----


def encode_state(state: dict, *, topology: dict, fingerprint: str) -> bytes:
    """Wrap Zephon's ``checkpoint()`` dict in the envelope [state-envelope].

    Raises:
        TypeError: ``state`` is not a dict, ``fingerprint`` is not a str, or ``state`` is
            not JSON-serialisable.
        ValueError: ``topology`` lacks an int >= 1 ``world_size``/``dp_degree``/
            ``canonical_replicas``; ``state`` holds NaN or an infinity.
    """
    if not isinstance(state, dict):
        raise TypeError(f"state must be the dict pipeline.checkpoint() returns, got {type(state).__name__}")
    if not isinstance(fingerprint, str):
        raise TypeError(f"fingerprint must be a str, got {type(fingerprint).__name__}")
    for key in _TOPOLOGY_KEYS:
        value = topology.get(key)
        if not (_is_int(value) and value >= 1):
            raise ValueError(f"topology[{key!r}] must be an int >= 1, got {value!r}")
    body = canonical_json(
        {"fingerprint": fingerprint, "state": state, "topology": {k: topology[k] for k in _TOPOLOGY_KEYS}}
    )
    head = MAGIC + bytes([SCHEMA_VERSION]) + _LENGTH.pack(len(body)) + body
    return head + hashlib.sha256(head).digest()


def decode_state(data: bytes, *, expected_fingerprint: str | None, expected_canonical_replicas: int | None) -> dict:
    """Check the envelope and return the Zephon state dict [state-envelope,
    state-load-validates-first, state-body-valid, state-fingerprint, state-canonical-replicas].

    The checks run in the order of the module docstring (``bad magic``, ``unsupported
    version``, ``truncated``, ``checksum mismatch``, ``malformed body``, ``fingerprint
    mismatch``, ``canonical_replicas changed``). ``None`` skips the fingerprint or
    canonical_replicas comparison.

    Raises:
        TypeError: ``data`` is not bytes or bytearray.
        ValueError: the first check that fails; its message starts with the check's name.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"state bytes must be bytes, got {type(data).__name__}")
    data = bytes(data)

    # 1. bad magic: a foreign file is reported as foreign, whatever its length.
    if data[: len(MAGIC)] != MAGIC:
        raise ValueError(f"bad magic: state starts with {data[: len(MAGIC)]!r}, but should start with {MAGIC!r}")

    # 2. unsupported version: exactly version 1.
    if len(data) == len(MAGIC):
        raise ValueError(
            f"unsupported version: the state ends after the magic, without a schema version byte; "
            f"this loader reads version {SCHEMA_VERSION}"
        )
    version = data[len(MAGIC)]
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"unsupported version: state schema version {version}, but this loader reads only version {SCHEMA_VERSION}"
        )

    # 3. truncated: the length must be exactly what the header says.
    if len(data) < _HEADER_SIZE:
        raise ValueError(f"truncated: state holds {len(data)} bytes, fewer than the {_HEADER_SIZE}-byte header")
    (body_length,) = _LENGTH.unpack_from(data, len(MAGIC) + 1)
    expected_size = _HEADER_SIZE + body_length + _DIGEST_SIZE
    if len(data) != expected_size:
        raise ValueError(
            f"truncated: the header says the body holds {body_length} bytes, so the state should hold "
            f"{expected_size} bytes, but it holds {len(data)}"
        )

    # 4. checksum mismatch
    head, digest = data[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
    if hashlib.sha256(head).digest() != digest:
        raise ValueError("checksum mismatch: the sha256 digest does not match the state's contents")

    # 5. malformed body: the envelope's object, then its state against the structure of the
    # pipeline's checkpoint [state-body-valid]
    body = _parse_body(head[_HEADER_SIZE:])
    check_state_structure(body["state"], canonical_replicas=body["topology"]["canonical_replicas"])

    # 6. fingerprint mismatch
    fingerprint = body["fingerprint"]
    if expected_fingerprint is not None and fingerprint != expected_fingerprint:
        raise ValueError(
            f"fingerprint mismatch: the state was saved by a pipeline with fingerprint {fingerprint}, "
            f"but this pipeline's fingerprint is {expected_fingerprint}"
        )

    # 7. canonical_replicas changed
    saved_replicas = body["topology"]["canonical_replicas"]
    if expected_canonical_replicas is not None and saved_replicas != expected_canonical_replicas:
        raise ValueError(
            f"canonical_replicas changed: the state was saved with canonical_replicas={saved_replicas}, "
            f"but this pipeline has canonical_replicas={expected_canonical_replicas}"
        )
    return body["state"]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate keys in an object: {sorted(k for k in set(keys) if keys.count(k) > 1)}")
    return dict(pairs)


def _parse_body(raw: bytes) -> dict:
    """The body's JSON object with exactly its keys, typed [state-envelope].

    Raises:
        ValueError: ``malformed body: ...``.
    """
    try:
        body = json.loads(
            raw.decode("utf-8"), parse_constant=_reject_constant, object_pairs_hook=_object_without_duplicates
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValueError(f"malformed body: not UTF-8 JSON ({type(error).__name__}: {error})") from None
    if not isinstance(body, dict):
        raise ValueError(f"malformed body: must be a JSON object, got {type(body).__name__}")  # SPEC: ValueError
    if sorted(body) != sorted(_BODY_KEYS):
        raise ValueError(f"malformed body: keys must be exactly {list(_BODY_KEYS)}, got {sorted(body)}")
    if not isinstance(body["fingerprint"], str):
        raise ValueError(
            f"malformed body: fingerprint must be a string, got {type(body['fingerprint']).__name__}"
        )  # SPEC: ValueError
    if not isinstance(body["state"], dict):
        raise ValueError(
            f"malformed body: state must be an object, got {type(body['state']).__name__}"
        )  # SPEC: ValueError
    topology = body["topology"]
    if not isinstance(topology, dict):
        raise ValueError(
            f"malformed body: topology must be an object, got {type(topology).__name__}"
        )  # SPEC: ValueError
    if sorted(topology) != sorted(_TOPOLOGY_KEYS):
        raise ValueError(
            f"malformed body: topology keys must be exactly {list(_TOPOLOGY_KEYS)}, got {sorted(topology)}"
        )
    for key in _TOPOLOGY_KEYS:
        if not (_is_int(topology[key]) and topology[key] >= 1):
            raise ValueError(f"malformed body: topology.{key} must be an integer >= 1, got {topology[key]!r}")
    return body


def pipeline_topology(pipeline: Any) -> dict:
    """``world_size``, ``dp_degree`` (default ``world_size``) and ``canonical_replicas``
    (default ``dp_degree``) from the pipeline's runtime options [state-canonical-replicas]."""
    options = getattr(pipeline, "_options", None)
    world_size = getattr(options, "world_size", None) or 1
    dp_degree = getattr(options, "dp_degree", None) or world_size
    canonical_replicas = getattr(options, "canonical_replicas", None) or dp_degree
    return {"world_size": int(world_size), "dp_degree": int(dp_degree), "canonical_replicas": int(canonical_replicas)}


# ---------------------------------------------------------------------- fingerprint ----

FINGERPRINT_SCHEMA = 1

# Zephon 0.2.0's op class -> the zephon.Pipeline method that adds it. pack_flat and
# pack_sequences share PackSequences (told apart by its output mode); an op class not listed
# here (a user's op, whose class name is None here; Zephon's _FunctionalOp) came from add_op.
_BUILDER_METHODS: dict[str | None, str] = {
    "DecodeText": "decode_text",
    "MapTransform": "map_transform",
    "MapBatchTransform": "map_batch",
    "StatefulTransformOp": "stateful_transform",
    "TokenizeText": "tokenize",
    "ExpandChat": "expand_chat",
    "TokenizeChat": "tokenize_chat",
    "ShuffleBuffer": "shuffle",
    "EnsureMixture": "ensure_mixture",
    "Materialize": "materialize",
    "Batch": "batch",
}
# Graph nodes that are not stages: the work source's fetch, prefetch (a runtime knob), and the
# ReplayFilter nodes Zephon's planner inserts when it builds its engine.
_NOT_STAGES = frozenset({"FetchOp", "PrefetchOp", "ReplayFilter"})
_TOKENIZER_KEYS = ("name_or_path", "vocab_size", "bos_token_id", "eos_token_id", "pad_token_id")


def _zephon_class(op: Any) -> str | None:
    """The name of ``op``'s class when Zephon itself defines it, else ``None``."""
    cls = type(op)
    return cls.__name__ if cls.__module__.split(".")[0] == "zephon" else None


def _scalar(value: Any) -> Any:
    """A setting as a JSON scalar: ``None``, bool, str, int and float as themselves; any
    other value (none in Zephon 0.2.0's settings) as ``None``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return None


def _attribute(obj: Any, name: str) -> Any:
    """``obj.name`` as a JSON scalar, ``None`` when absent or unreadable."""
    try:
        return _scalar(getattr(obj, name, None))
    except Exception:  # a property that cannot be read describes nothing
        return None


def _builder_method(op: Any) -> str:
    """The ``zephon.Pipeline`` method that added the stage running ``op``."""
    name = _zephon_class(op)
    if name == "PackSequences":
        return "pack_flat" if op.output == "flat" else "pack_sequences"
    return _BUILDER_METHODS.get(name, "add_op")


def _tokenizer_identity(op: Any) -> dict | None:
    """``tokenize``'s ``tokenizer`` setting.

    A tokenizer object passed to ``tokenize``: its five identity attributes. A tokenizer
    Zephon loads itself from ``tokenizer_id``: that id as ``name_or_path``, the rest ``None``
    (Zephon loads it lazily, at the first batch; describing the loaded object would change
    the fingerprint between a saving and a loading loader). Neither: ``None``.
    """
    tokenizer_id = getattr(op, "tokenizer_id", None)
    if tokenizer_id is not None:
        return {key: (_scalar(tokenizer_id) if key == "name_or_path" else None) for key in _TOKENIZER_KEYS}
    tokenizer = getattr(op, "tok", None)
    if tokenizer is None:
        return None
    return {key: _attribute(tokenizer, key) for key in _TOKENIZER_KEYS}


def _describe_stage(op: Any) -> dict:
    """``{"op": method, ...settings}`` for one stage [state-fingerprint-canonical]."""
    method = _builder_method(op)
    if method == "tokenize":
        return {
            "op": method,
            "field": _attribute(op, "field"),
            "max_length": _attribute(op, "max_length"),
            "special_tokens": _attribute(op, "special_tokens"),
            "split_long_samples": _attribute(op, "split_long_samples"),
            "add_attention_mask": _attribute(op, "add_attention_mask"),
            "tokenizer": _tokenizer_identity(op),
        }
    if method in ("pack_flat", "pack_sequences"):
        return {
            "op": method,
            "max_length": _attribute(op, "max_length"),
            "algorithm": _attribute(op, "algorithm"),
            "num_bins": _attribute(op, "num_bins"),
            "pad_token_id": _attribute(op, "pad_token_id"),
        }
    if method == "batch":
        return {"op": method, "batch_size": _attribute(op, "microbatch_size"), "drop_last": _attribute(op, "drop_last")}
    return {"op": method}


def pipeline_description(pipeline: Any) -> dict:
    """The pipeline's description that the fingerprint hashes [state-fingerprint-canonical].

    ``{"batchspec_fingerprint": 1, "stages": [...]}``: one ``{"op": NAME, ...settings}`` per
    stage after the work source, in pipeline order, without ``prefetch`` and the stages Zephon
    inserts itself (``ReplayFilter``). NAME is the ``zephon.Pipeline`` method that added the
    stage; the settings are exactly:

    - ``tokenize``: ``field``, ``max_length``, ``special_tokens``, ``split_long_samples``,
      ``add_attention_mask``, ``tokenizer`` (``{"name_or_path", "vocab_size", "bos_token_id",
      "eos_token_id", "pad_token_id"}``, see ``_tokenizer_identity``);
    - ``pack_flat``, ``pack_sequences``: ``max_length``, ``algorithm``, ``num_bins``,
      ``pad_token_id``;
    - ``batch``: ``batch_size`` (Zephon's ``microbatch_size``), ``drop_last``;
    - any other stage (``add_op``, ``map_transform``, ``shuffle``, ...): none.

    An unset setting is ``None``. Runtime and topology options (runner, prefetch, world size,
    ranks, ``canonical_replicas``, ``run_id``, ``aggregate_dir``) are not part of it.

    Raises:
        TypeError: ``pipeline`` has no Zephon graph (``_graph.nodes``) to describe.
    """
    nodes = getattr(getattr(pipeline, "_graph", None), "nodes", None)
    if nodes is None:
        raise TypeError(f"cannot fingerprint a {type(pipeline).__name__}: it has no zephon.Pipeline graph")
    stages = [_describe_stage(node.op) for node in nodes if _zephon_class(node.op) not in _NOT_STAGES]
    return {"batchspec_fingerprint": FINGERPRINT_SCHEMA, "stages": stages}


def pipeline_fingerprint(pipeline: Any) -> str:
    """Lowercase hex sha256 of ``canonical_json(pipeline_description(pipeline))``
    [state-fingerprint, state-fingerprint-canonical].

    Raises:
        TypeError: ``pipeline`` has no Zephon graph to describe.
    """
    return hashlib.sha256(canonical_json(pipeline_description(pipeline))).hexdigest()
