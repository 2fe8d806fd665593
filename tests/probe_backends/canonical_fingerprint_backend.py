"""The reference with a second, independent implementation of the pipeline fingerprint: a
portability probe for [state-fingerprint-canonical].

This backend is the reference, except that its ``ZephonDataLoader`` computes the fingerprint
with ``canonical_fingerprint`` below, written from the clause's text and sharing no code with
``batchspec.reference.checkpoint``: it finds the stages by Zephon's node names (the reference goes by op
class), writes the canonical JSON by hand (the reference calls ``json.dumps``), then hashes
it. A state saved by one backend loads in the other only if both give the same digest for the
same pipeline, which is what the clause promises.

Zephon 0.2.0 offers no public way to list a pipeline's stages and their settings, so this
probe reads its private graph too (``pipeline._graph.nodes``, each node's ``name`` and
``op``).

Use: ``PYTHONPATH=tests/probe_backends:. pytest conformance --backend=canonical_fingerprint_backend``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from batchspec import reference as _reference

__version__ = "canonical-fingerprint-0"
BATCHSPEC_SPEC_VERSION = _reference.BATCHSPEC_SPEC_VERSION
BATCHSPEC_CAPABILITIES = _reference.BATCHSPEC_CAPABILITIES

# ---------------------------------------------------------------- canonical JSON, by hand ----

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(text: str) -> str:
    """A JSON string in ASCII: printable ASCII as itself (but ``"`` and ``\\``), the short
    escapes, every other character as ``\\uXXXX`` (lowercase hex; UTF-16 surrogate pairs above
    U+FFFF)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0x20 <= code <= 0x7E:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
    out.append('"')
    return "".join(out)


def write_canonical_json(value: Any) -> str:
    """Canonical JSON: object keys sorted, no whitespace, ASCII only."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(write_canonical_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_string(key) + ":" + write_canonical_json(value[key]) for key in sorted(value)) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


# ---------------------------------------------------------------- the description ----

# The node names zephon.Pipeline's builder methods give the stages they add (Zephon 0.2.0).
_METHOD_OF_NODE = {
    "decode_text": "decode_text",
    "map_transform": "map_transform",
    "map_batch": "map_batch",
    "tokenize": "tokenize",
    "expand_chat": "expand_chat",
    "tokenize_chat": "tokenize_chat",
    "shuffle_buffer": "shuffle",
    "ensure_mixture": "ensure_mixture",
    "materialize": "materialize",
    "pack_flat": "pack_flat",
    "pack_sequences": "pack_sequences",
    "batch": "batch",
}
_TOKENIZER_IDENTITY = ("name_or_path", "vocab_size", "bos_token_id", "eos_token_id", "pad_token_id")


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (bool, int, float, str)) else None


def _tokenizer(op: Any) -> dict | None:
    if op.tokenizer_id is not None:  # loaded by Zephon later: identified by the id it was given
        return {
            "name_or_path": op.tokenizer_id,
            "vocab_size": None,
            "bos_token_id": None,
            "eos_token_id": None,
            "pad_token_id": None,
        }
    if op.tok is None:
        return None
    return {key: _plain(getattr(op.tok, key, None)) for key in _TOKENIZER_IDENTITY}


def _stage(node: Any) -> dict:
    op = node.op
    if type(op).__name__ == "StatefulTransformOp":  # named by its caller, like add_op's stages
        return {"op": "stateful_transform"}
    method = _METHOD_OF_NODE.get(node.name, "add_op")
    if method == "tokenize":
        return {
            "op": "tokenize",
            "field": op.field,
            "max_length": op.max_length,
            "special_tokens": op.special_tokens,
            "split_long_samples": op.split_long_samples,
            "add_attention_mask": op.add_attention_mask,
            "tokenizer": _tokenizer(op),
        }
    if method in ("pack_flat", "pack_sequences"):
        return {
            "op": method,
            "max_length": op.max_length,
            "algorithm": op.algorithm,
            "num_bins": op.num_bins,
            "pad_token_id": op.pad_token_id,
        }
    if method == "batch":
        return {"op": "batch", "batch_size": op.microbatch_size, "drop_last": op.drop_last}
    return {"op": method}


def describe(pipeline: Any) -> dict:
    """``{"batchspec_fingerprint": 1, "stages": [...]}``: every node but the work source's
    ``fetch``, ``prefetch`` and the ``<name>_replay_filter`` nodes Zephon's planner adds."""
    nodes = [
        node
        for node in pipeline._graph.nodes
        if node.name not in ("fetch", "prefetch") and not node.name.endswith("_replay_filter")
    ]
    return {"batchspec_fingerprint": 1, "stages": [_stage(node) for node in nodes]}


def canonical_fingerprint(pipeline: Any) -> str:
    """Lowercase hex sha256 of the hand-written canonical JSON of ``describe(pipeline)``."""
    return hashlib.sha256(write_canonical_json(describe(pipeline)).encode("ascii")).hexdigest()


# ---------------------------------------------------------------- the backend ----


class ZephonDataLoader(_reference.ZephonDataLoader):
    """The reference loader, fingerprinting its pipeline with ``canonical_fingerprint``."""

    def _fingerprint(self) -> str:
        return canonical_fingerprint(self._pipeline)


def __getattr__(name: str) -> Any:
    # Every other contract name is the reference's.
    return getattr(_reference, name)
