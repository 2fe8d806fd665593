"""[state-body-valid] (SPEC.md, "``ZephonDataLoader`` checkpoint state (single process)"): a
well-formed envelope (magic, version, length and sha256 all right) around a ``state`` that is
not shaped like the checkpoints the loader's pipeline writes is a ``malformed body`` at
``load_state_dict``, before anything is restored.

The suite knows nothing of the checkpoint's format. It reads the structure from the pipeline's
own checkpoints: two states of one pipeline, saved at different positions, and keeps only what
they share (a record: an object whose keys are field names, the same in both; an object keyed
by exactly the pipeline's lanes, or by exactly its data sources, in both). Each mutation below
breaks one item of the clause at one place and re-signs the envelope; every such state must be
refused with the ``ValueError`` naming ``malformed body`` (and no other check), the loader
unchanged and the pipeline untouched. Values that a structural check cannot see (another
position) are never drawn.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from batchspec.conformance.helpers.asserts import ClauseFailure, check, clause_failure
from batchspec.conformance.helpers.envelope import CHECKS, body_of, canonical_json, envelope
from batchspec.conformance.helpers.pipelines import SpyPipeline, envelope_after, index_pipeline, make_loader

CLAUSE = "state-body-valid"
# index_pipeline over 12 one-token rows in chunks of 2, one data source "d", read as
# canonical_replicas=3 lanes (so lane ids are told apart from other small keys)
PIPELINE = dict(n=12, chunk_size=2, policy="redistribute", canonical_replicas=3)
LANES = ("0", "1", "2")
SOURCES = ("d",)
POSITIONS = (2, 5)  # the states the structure is read from; the one mutated is the last

Path = tuple  # keys and indices from the top of ``state``


def _pipeline(root):
    return index_pipeline(root, PIPELINE["n"], PIPELINE["chunk_size"], PIPELINE["policy"], canonical_replicas=3)


def _objects(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every value of ``value`` with its path, the top first."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _objects(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _objects(item, (*path, index))


def _at(state: Any, path: Path) -> Any:
    for step in path:
        state = state[step]
    return state


def _shared(states: list[dict]) -> dict[Path, list[Any]]:
    """Path -> the value at that path in each state, for the paths every state has."""
    first = dict(_objects(states[0]))
    values: dict[Path, list[Any]] = {}
    for path, value in first.items():
        try:
            values[path] = [value, *(_at(other, path) for other in states[1:])]
        except (KeyError, IndexError, TypeError):
            continue
    return values


def _is_field_name(key: str) -> bool:
    """A lowercase Python identifier (``chunk_id``), not an id (``"0"``, ``"0/1:0"``)."""
    return key.isidentifier() and key == key.lower()


def _kind(values: list[Any]) -> str | None:
    """``record``, ``lanes`` or ``sources`` when every state has an object of that kind here."""
    if not all(isinstance(v, dict) and v for v in values):
        return None
    keys = [tuple(sorted(v)) for v in values]
    if len(set(keys)) != 1:
        return None
    if keys[0] == LANES:
        return "lanes"
    if keys[0] == SOURCES:
        return "sources"
    if all(_is_field_name(k) for k in keys[0]) and not set(keys[0]) & {*LANES, *SOURCES}:
        return "record"
    return None


def _edited(state: dict, path: Path, edit: Callable[[Any, Any], None]) -> dict:
    """A copy of ``state`` with ``edit(parent, key)`` applied at ``path``."""
    copied = copy.deepcopy(state)
    edit(_at(copied, path[:-1]), path[-1])
    return copied


def _replace(value: Any) -> Callable[[Any, Any], None]:
    def edit(parent, key):
        parent[key] = value

    return edit


def _mutations(states: list[dict], wanted: str) -> list[tuple[str, dict]]:
    """(where, mutated state) of the last of ``states`` for the mutation class ``wanted``, each
    breaking one item of [state-body-valid] at one place. Only that class's states are copied
    (every class's, a deep copy each, took most of the check's time)."""
    state = states[-1]
    found: list[tuple[str, dict]] = []

    def add(name: str, path: Path, at: Path, edit: Callable[[Any, Any], None]) -> None:
        """The state with ``edit(parent, key)`` applied at ``at``, reported at ``path``."""
        if name == wanted:
            found.append(("state" + "".join(f"[{step!r}]" for step in path), _edited(state, at, edit)))

    for path, values in _shared(states).items():
        value = values[-1]
        kind = _kind(values)
        # item 1: the keys of each record, exactly
        if kind == "record":
            for key in sorted(value):
                add("record-key-missing", path, (*path, key), lambda p, k: p.pop(k))
                add("record-key-renamed", path, (*path, key), lambda p, k: p.__setitem__(k + "_x", p.pop(k)))
            add("record-key-added", path, (*path, "x"), lambda p, k: p.__setitem__("batchspec_unknown", 0))
        # item 2: one key for each lane, or each data source
        if kind in ("lanes", "sources"):
            ids = LANES if kind == "lanes" else SOURCES
            extra = str(len(LANES)) if kind == "lanes" else "e"
            add(f"{kind}-id-missing", path, (*path, ids[-1]), lambda p, k: p.pop(k))

            def copy_as_extra(parent: Any, key: Any, extra: str = extra) -> None:
                parent[extra] = parent[key]

            add(f"{kind}-id-added", path, (*path, ids[0]), copy_as_extra)
        if not path or not all(type(v) is type(value) for v in values):
            continue
        # item 3: the JSON type of each value (a null is never changed: the pipeline may write one)
        if isinstance(value, dict) and value:
            add("object-as-array", path, path, _replace(list(value.values())))
        elif isinstance(value, list):
            add("array-as-object", path, path, _replace({str(i): v for i, v in enumerate(value)}))
        elif isinstance(value, bool):
            add("boolean-as-integer", path, path, _replace(int(value)))
        elif isinstance(value, int):
            add("integer-as-string", path, path, _replace(str(value)))
            add("integer-as-fraction", path, path, _replace(value + 0.5))
            add("integer-as-boolean", path, path, _replace(value != 0))
            # item 4: below 2**63; non-negative (a seed, the user's own setting, may be negative)
            add("integer-beyond-int64", path, path, _replace(2**64 + value))
            add("integer-at-int64-end", path, path, _replace(2**63))  # the bound itself
            if path[-1] != "seed":
                add("integer-negative", path, path, _replace(-1 - value))
            if path[-1] == "version":
                add("version-changed", path, path, _replace(value + 1))
        elif isinstance(value, str):
            add("string-as-integer", path, path, _replace(7))
    return found


def _at_int64_largest(states: list[dict]) -> list[tuple[str, dict]]:
    """(where, state): the last of ``states`` with one integer set to 2**63 - 1, the largest that
    item 4 of [state-body-valid] keeps, at each place every state holds an integer (a version
    aside: item 4 fixes its value)."""
    state = states[-1]
    found: list[tuple[str, dict]] = []
    for path, values in _shared(states).items():
        if path and path[-1] != "version" and all(type(v) is int for v in values):
            found.append(("state" + "".join(f"[{step!r}]" for step in path), _edited(state, path, _replace(2**63 - 1))))
    return found


# mutation class -> the item of [state-body-valid] it breaks
MUTATION_CLASSES = {
    "record-key-missing": 1,
    "record-key-renamed": 1,
    "record-key-added": 1,
    "lanes-id-missing": 2,
    "lanes-id-added": 2,
    "sources-id-missing": 2,
    "sources-id-added": 2,
    "object-as-array": 3,
    "array-as-object": 3,
    "boolean-as-integer": 3,
    "integer-as-string": 3,
    "integer-as-fraction": 3,
    "integer-as-boolean": 3,
    "string-as-integer": 3,
    "integer-beyond-int64": 4,
    "integer-at-int64-end": 4,
    "integer-negative": 4,
    "version-changed": 4,
}


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause(
    "state-body-valid", "state-load-validates-first", "state-load-validates-first.5", "state-exact-resume"
)
@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(name, marks=pytest.mark.clause(f"state-body-valid.{item}"), id=name)
        for name, item in MUTATION_CLASSES.items()
    ],
)
def test_a_reshaped_state_is_a_malformed_body_at_load(backend, scratch, mutation):
    """Every state of the class, re-signed, is refused by ``load_state_dict`` with the
    ``ValueError`` naming ``malformed body`` and no other check; the loader keeps its state and
    the pipeline is not iterated, checkpointed or restored; the unmutated state then loads and
    resumes exactly."""
    saved = [envelope_after(backend, _pipeline(scratch / f"saved-{k}"), k) for k in POSITIONS]
    body = body_of(saved[-1])
    mutated = _mutations([body_of(data)["state"] for data in saved], mutation)
    if not mutated:
        raise ClauseFailure(
            f"the pipeline's checkpoints hold no place for the mutation {mutation!r}: the states it saves share no "
            "record, lane map or source map, or no value of that type [state-body-valid]",
            CLAUSE,
        )
    spy = SpyPipeline(_pipeline(scratch / "loaded"))
    loader = make_loader(backend, spy)
    accepted, other = [], []
    for where, state in mutated:
        data = envelope(canonical_json({**body, "state": state}))
        try:
            loader.load_state_dict({"zephon": data})
        except ValueError as error:
            named = [name for name in CHECKS if name in str(error)]
            if named != ["malformed body"]:
                other.append(f"{where}: ValueError naming {named}: {str(error)[:200]}")
        except Exception as error:
            other.append(f"{where}: {type(error).__name__}: {str(error)[:200]}")
        else:
            accepted.append(where)
            loader = make_loader(backend, spy)  # a later mutation must meet a loader that loaded nothing
    if accepted or other:
        raise clause_failure(
            f"{len(accepted) + len(other)} of {len(mutated)} states with a {mutation} were not refused at load as a "
            f"'malformed body' ValueError naming no other check; accepted at: {accepted[:5]}; "
            f"raised otherwise: {other[:3]}",
            clause=CLAUSE,
        )
    check(
        loader.state_dict() == {"zephon": b""},
        "a refused load must leave the loader unchanged [state-body-valid]",
        clause=CLAUSE,
    )
    check(
        spy.calls == {"iter": 0, "checkpoint": 0, "restore": 0},
        f"pipeline calls {spy.calls} while refusing reshaped states, but should be none: the check runs at load, "
        "before anything is restored [state-body-valid]",
        clause=CLAUSE,
    )
    loader.load_state_dict({"zephon": saved[-1]})
    rest = list(loader)
    whole = list(make_loader(backend, _pipeline(scratch / "whole")))
    check(
        rest == whole[POSITIONS[-1] :],
        f"the unmutated state resumes {rest}, but should resume {whole[POSITIONS[-1] :]}",
        clause="state-exact-resume",
    )


@pytest.mark.requires("zephon_loader", "zephon_state")
@pytest.mark.clause("state-load-validates-first", "state-load-validates-first.5", "state-body-valid")
def test_an_integer_at_int64s_largest_is_no_malformed_body(backend, scratch):
    """[state-body-valid] item 4's bound from below (issue 31): a state with the structure whose
    integer (a count, an offset, a seed) is 2**63 - 1, re-signed, fails none of the checks of
    [state-load-validates-first], so ``load_state_dict`` accepts it (what the value describes is
    the first ``next()``'s business, never iterated here). 2**63 itself is the class
    ``integer-at-int64-end`` of ``test_a_reshaped_state_is_a_malformed_body_at_load``."""
    saved = [envelope_after(backend, _pipeline(scratch / f"saved-{k}"), k) for k in POSITIONS]
    body = body_of(saved[-1])
    placed = _at_int64_largest([body_of(data)["state"] for data in saved])
    if not placed:
        raise clause_failure("the pipeline's checkpoints hold no integer both states share", clause="state-body-valid")
    refused: list[str] = []
    for where, state in placed:
        loader = make_loader(backend, _pipeline(scratch / "loaded"))
        try:
            loader.load_state_dict({"zephon": envelope(canonical_json({**body, "state": state}))})
        except ValueError as error:
            refused.append(f"{where}: {str(error)[:200]}")
    if refused:
        raise clause_failure(
            f"{len(refused)} of {len(placed)} states with one integer at 2**63 - 1 (in range: -2**63 <= n < 2**63) "
            f"were refused at load, though they have the structure and fail no check; refused at: {refused[:3]}",
            clause="state-load-validates-first",
        )
