"""The structure of the checkpoint a Zephon 0.2.0 pipeline writes, and the check of a loaded
``state`` against it [state-body-valid].

A state envelope's body carries ``state``, the pipeline's ``checkpoint()`` dict. The envelope's
own checks (magic, version, length, sha256, the body's three keys) say nothing about whether
that dict is a checkpoint at all: a body reshaped and re-signed passes them. Zephon 0.2.0
validates little of it when it is handed over (``Pipeline.restore``) and applies it lazily at
the first ``next()``, where a reshaped checkpoint fails with a ``KeyError``, ``IndexError``,
``AttributeError`` or ``TypeError``, or restores silently to an empty or another stream.

So ``load_state_dict`` compares ``state`` with ``ENGINE_STATE``, the structure every
checkpoint of the pipeline shares (Zephon 0.2.0's engine checkpoint, version 2), and rejects a
mismatch as a ``malformed body`` before anything is restored:

- a record (``Record``) has exactly its keys (an ``optional`` key may be absent); ``Either``
  is one of several records (``world``: one rank's, or the one merged from every rank's);
- an id map (``Ids``) is keyed by exactly the ids of its kind: ``lane`` maps by every lane
  ``"0"`` … ``"C-1"`` (C, the body's ``topology.canonical_replicas``), ``source`` maps by the
  lane's data sources (its ``component_order``); ``chunk`` and ``any`` maps by any ids;
- every value has its JSON type: ``COUNT`` an integer (never a boolean) in ``[0, 2**63)``,
  ``INT`` any integer, ``NUMBER`` an integer or a float, ``STR``, ``BOOL``, ``Const`` one
  integer (a schema version), ``Maybe`` also ``null``, ``ANY`` anything JSON.

This table is an implementation detail of the reference: SPEC binds only the outcome (a
``state`` that is not shaped like the pipeline's checkpoint is a ``malformed body`` at load).
What it cannot see: a ``state`` of the right structure with other values (another position of
this stream, or one edited to look like one) is a position, and resumes from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ENGINE_STATE", "check_state_structure"]

_INT64_END = 2**63


@dataclass(frozen=True)
class _Scalar:
    name: str  # "count", "int", "number", "str", "bool", "any"


@dataclass(frozen=True)
class Const:
    value: int


@dataclass(frozen=True)
class Maybe:
    inner: Any


@dataclass(frozen=True)
class ListOf:
    item: Any


@dataclass(frozen=True)
class Tuple:
    items: tuple


@dataclass(frozen=True)
class Ids:
    kind: str  # "lane", "source", "chunk", "any"
    value: Any


@dataclass(frozen=True)
class Record:
    fields: dict
    optional: frozenset = field(default_factory=frozenset)


@dataclass(frozen=True)
class Either:
    """One of several records, told apart by their keys (the first when none has them)."""

    records: tuple


COUNT, INT, NUMBER, STR, BOOL, ANY = (_Scalar(n) for n in ("count", "int", "number", "str", "bool", "any"))

CURSOR_STATE = Record(
    {"epoch": COUNT, "position": COUNT, "version": Const(1), "block_rng_snapshot": ANY},
    optional=frozenset({"block_rng_snapshot"}),
)

WORK_CHUNK = Record(
    {
        "component_order": ListOf(STR),
        "components": ListOf(Tuple((STR, ListOf(Tuple((COUNT, COUNT, COUNT)))))),
        "seed": Maybe(INT),
        "source_exhausted": ListOf(STR),
        "target_mixture": Maybe(Ids("source", NUMBER)),
        "total_samples": Maybe(COUNT),
        "version": Const(3),
    }
)


def _work_source(lane: Any) -> Record:
    """The work source's checkpoint (version 5); ``lane`` is the type of ``lane_id`` and
    ``canonical_replicas`` (the engine's own copy, ``work_source``, leaves them ``null``)."""
    return Record(
        {
            "accumulators": Maybe(Ids("source", NUMBER)),
            "allocation_mode": STR,
            "canonical_replicas": lane,
            "chunk_size": COUNT,
            "chunk_size_hint": Maybe(COUNT),
            "component_order": ListOf(STR),
            "cursor_block_sizes": Ids("source", Maybe(COUNT)),
            "cursor_epochs": Ids("source", COUNT),
            "cursor_positions": Ids("source", COUNT),
            "cursor_states": Ids("source", CURSOR_STATE),
            "dataset_ids": Ids("source", COUNT),
            "exhausted_policy": Ids("source", STR),
            "global_chunk_index": COUNT,
            "knobs": Record({"shuffle_shards": BOOL, "shuffle_within_shard": BOOL}),
            "lane_assignment": STR,
            "lane_id": lane,
            "max_repeats": Ids("source", Maybe(COUNT)),
            "reshuffle_on_repeat": Ids("source", BOOL),
            "seed": INT,
            "shuffle_block_size_spec": ANY,
            "stop_after_passes": Maybe(COUNT),
            "token_deficits": Maybe(Ids("source", NUMBER)),
            "token_ratios": ANY,
            "version": Const(5),
            "weights": Ids("source", NUMBER),
        }
    )


ENGINE_STATE = Record(
    {
        "checkpoint_reload_count": COUNT,
        "epoch_boundaries": Ids("any", ListOf(COUNT)),  # only the lanes that crossed an epoch
        "inflight": Ids("lane", Ids("chunk", WORK_CHUNK)),
        "lane_emitted": Ids("lane", COUNT),
        "lane_next_cid": Ids("lane", COUNT),
        "lane_ws_state": Ids("lane", _work_source(COUNT)),
        "last_round_id": Maybe(STR),
        "progress": Ids("lane", Record({"chunk_id": COUNT, "offset": COUNT})),
        "replay_cursors": Ids("lane", Maybe(Tuple((COUNT, COUNT, ListOf(COUNT), Tuple((COUNT, COUNT, COUNT)))))),
        "rr_next_idx": Ids("any", COUNT),
        "version": Const(2),
        "work_config": ANY,
        "work_source": Maybe(_work_source(Maybe(COUNT))),
        # one rank's own checkpoint, or the one merged from every rank's (world_size > 1)
        "world": Either(
            (
                Record(
                    {
                        "canonical_replicas": COUNT,
                        "dp_degree": COUNT,
                        "dp_group_id": COUNT,
                        "global_rank": COUNT,
                        "mapping": Ids("any", ListOf(COUNT)),
                        "world_size": COUNT,
                    }
                ),
                Record({"canonical_replicas": COUNT, "world_size": Maybe(COUNT)}),
            )
        ),
    }
)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _fail(path: str, expected: str, value: Any) -> ValueError:
    shown = repr(value) if not isinstance(value, (dict, list)) else _json_type(value)
    return ValueError(f"malformed body: state{path} must be {expected}, got {shown}")


def _check(value: Any, shape: Any, path: str, lanes: list[str], sources: list[str] | None) -> None:
    """Raise ``ValueError("malformed body: ...")`` naming the first place where ``value`` is
    not ``shape``; ``sources`` is the enclosing work source's ``component_order``."""
    if shape is ANY:
        return
    if isinstance(shape, Maybe):
        if value is not None:
            _check(value, shape.inner, path, lanes, sources)
        return
    if isinstance(shape, Const):
        if _json_type(value) != "integer" or value != shape.value:
            raise _fail(path, f"the integer {shape.value}", value)
        return
    if isinstance(shape, _Scalar):
        kind = _json_type(value)
        if shape is COUNT and not (kind == "integer" and 0 <= value < _INT64_END):
            raise _fail(path, "an integer in [0, 2**63)", value)
        if shape is INT and not (kind == "integer" and -_INT64_END <= value < _INT64_END):
            raise _fail(path, "an integer in [-2**63, 2**63)", value)
        if shape is NUMBER and kind not in ("integer", "number"):
            raise _fail(path, "a number", value)
        if shape is STR and kind != "string":
            raise _fail(path, "a string", value)
        if shape is BOOL and kind != "boolean":
            raise _fail(path, "a boolean", value)
        return
    if isinstance(shape, (ListOf, Tuple)):
        if not isinstance(value, list):
            raise _fail(path, "an array", value)
        if isinstance(shape, Tuple) and len(value) != len(shape.items):
            raise ValueError(f"malformed body: state{path} must hold {len(shape.items)} items, got {len(value)}")
        for index, item in enumerate(value):
            item_shape = shape.items[index] if isinstance(shape, Tuple) else shape.item
            _check(item, item_shape, f"{path}[{index}]", lanes, sources)
        return
    if not isinstance(value, dict):
        raise _fail(path, "an object", value)
    if isinstance(shape, Either):
        matching = [record for record in shape.records if set(record.fields) == set(value)]
        shape = matching[0] if matching else shape.records[0]
    if isinstance(shape, Record):
        missing = sorted(set(shape.fields) - set(value) - shape.optional)
        unknown = sorted(set(value) - set(shape.fields))
        if missing or unknown:
            raise ValueError(
                f"malformed body: state{path} must hold the keys {sorted(shape.fields)}; missing {missing}, "
                f"unknown {unknown}"
            )
        if "component_order" in value and isinstance(value["component_order"], list):
            sources = value["component_order"]
        for key in sorted(value):
            _check(value[key], shape.fields[key], f"{path}.{key}", lanes, sources)
        return
    # an id map
    expected = {"lane": lanes, "source": sources}.get(shape.kind)
    if expected is not None and sorted(value) != sorted(expected):
        raise ValueError(
            f"malformed body: state{path} must be keyed by the {shape.kind}s {sorted(expected)}, got {sorted(value)}"
        )
    for key in sorted(value):
        _check(value[key], shape.value, f"{path}[{key!r}]", lanes, sources)


def check_state_structure(state: dict, *, canonical_replicas: int) -> None:
    """Check that ``state`` (the body's ``state`` object) has the structure of the checkpoint
    a pipeline with ``canonical_replicas`` lanes writes [state-body-valid]: ``ENGINE_STATE``,
    lanes ``"0"`` … ``str(canonical_replicas - 1)``.

    Raises:
        ValueError: ``malformed body: state<path> ...`` naming the first place, in key order,
            where ``state`` differs (a missing or unknown key, a value of another JSON type,
            an integer out of range, a map keyed by other ids) [state-load-validates-first].
    """
    lanes = [str(lane) for lane in range(canonical_replicas)]
    _check(state, ENGINE_STATE, "", lanes, None)
