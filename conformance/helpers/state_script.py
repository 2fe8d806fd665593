"""Checkpoint-state scripts (SPEC.md, "``ZephonDataLoader`` checkpoint state (single process)")
for golden cases: ``ZephonDataLoader.state``.

A script drives one or more ``impl.ZephonDataLoader``s over REAL in-memory Zephon pipelines
(``batchspec.conformance.helpers.pipelines.index_pipeline``, field reports F16/F17 in docs/sources.md:
one-token rows, ``batch``, inline runner, ``convert_batch`` = ``row_indices``), each wrapped in a
``SpyPipeline``. ``inputs["pipelines"]`` names the pipeline settings
(``{"A": {"n": 10, "chunk_size": 2, "policy": "redistribute"}}``, optionally ``shuffle``,
``batch_size``, ``pack``, ``canonical_replicas``, ``run_id``); ``options["script"]`` lists
the actions, and the output is ``{"outcomes": {"<step> <action>": outcome}}``:

- ``new:P``: a fresh loader over a freshly built pipeline ``P`` becomes the current loader → ``None``
- ``next`` → the batch's row indices, ``"StopIteration"`` or an error (below)
- ``rest`` → ``list(loader)``: every remaining batch (or an error)
- ``iter`` → whether ``iter(loader) is loader``; ``close`` → ``None``
- ``iterator`` → whether ``isinstance(loader, collections.abc.Iterator)`` [loader-iterator]
- ``distributed`` → ``use_distributed_checkpointing`` read on the loader's class and on the
  loader, ``{"class": ..., "instance": ...}`` (``"<missing>"`` when absent)
  [loader-distributed-checkpointing]
- ``state`` → ``state_dict()["zephon"]`` as ``""`` (for ``b""``) or the envelope's view (below)
- ``save:S`` → records ``state_dict()["zephon"]`` as ``S``; ``"empty"`` or ``"non-empty"``
- ``same:S`` → whether ``state_dict()["zephon"]`` is exactly the bytes recorded as ``S``
- ``load:S`` → ``load_state_dict({"zephon": S})``: ``None`` or an error. ``load:S:c1+c2``
  loads ``S`` after the corruptions ``c1``, then ``c2`` (``batchspec.conformance.helpers.envelope.CORRUPTIONS``),
  which follow the envelope layout of [state-envelope], so they work on any backend's own bytes
  (``foreign`` and ``short_foreign`` replace them with bytes that are not an envelope at all).
- ``load_arg:NAME`` → ``load_state_dict(BAD_ARGUMENTS[NAME])`` (``batchspec.conformance.helpers.envelope``): ``None`` or an error
- ``calls`` → how often the loader called the pipeline's ``iter()`` and ``checkpoint()``;
  ``restores`` → how often it called ``restore()``

An error is ``{"raised": type name, "check": the [state-load-validates-first] check its
message names (contains as a whole phrase) or None, "names": ...}``: for ``fingerprint mismatch`` the fingerprints
the message names (as labels, below), for ``canonical_replicas changed`` the pipelines'
``canonical_replicas`` values it names, else ``[]``.

The view of an envelope pins its bytes exactly: the header fields, whether the digest is the
sha256 of everything before it, whether the body is canonical JSON, the body's keys, its
``fingerprint`` (the 64-hex digest itself: [state-fingerprint-canonical] pins it, so it is
compared byte for byte), ``topology`` and ``state``, and the sha256 of the whole envelope.
Each fingerprint also gets a label for reading a case: ``fp0`` for the first fingerprint the
script meets, ``fp1`` for the next different one, …; equal labels mean equal fingerprints.
Zephon's scratch files go to a temporary directory, never into the bytes.
"""

from __future__ import annotations

import collections.abc
import hashlib
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from batchspec.conformance.helpers.asserts import clause_failure, names
from batchspec.conformance.helpers.envelope import (
    BAD_ARGUMENTS,
    CHECKS,
    CORRUPTIONS,
    DIGEST,
    HEADER,
    HEX64,
    MAGIC,
    body_length,
    body_of,
    canonical_json,
    corrupt,
    digest_matches,
    raw_body,
    version_of,
)
from batchspec.conformance.helpers.pipelines import SpyPipeline, index_pipeline, row_indices, zephon_catalog
from batchspec.conformance.helpers.sample_batches import Contract

__all__ = ["BAD_ARGUMENTS", "CHECKS", "CORRUPTIONS", "run_state_script"]


class _Labels:
    """``fp0``, ``fp1``, … for fingerprints in order of first appearance."""

    def __init__(self) -> None:
        self.by_value: dict[str, str] = {}

    def __call__(self, fingerprint: Any) -> Any:
        if not (isinstance(fingerprint, str) and HEX64.fullmatch(fingerprint)):
            return {"not a sha256 hex digest": fingerprint}
        return self.by_value.setdefault(fingerprint, f"fp{len(self.by_value)}")


def _view(data: bytes, label: _Labels) -> Any:
    """``""`` for ``b""``; the envelope as a comparable view; ``{"unparsable": hex}`` when
    the bytes are not magic | version | length | JSON body | digest."""
    if data == b"":
        return ""
    try:
        length = body_length(data)
        if len(data) != HEADER + length + DIGEST:
            raise ValueError("length")
        raw = raw_body(data)
        body = json.loads(raw)
        fingerprint = label(body["fingerprint"])
    except Exception:  # anything else is shown raw
        return {"unparsable": data.hex()}
    return {
        "magic": data[: len(MAGIC)].decode("latin-1"),
        "version": version_of(data),
        "body_length": length,
        "digest_is_sha256_of_the_rest": digest_matches(data),
        "body_is_canonical_json": raw == canonical_json(body),
        "body_keys": sorted(body),
        "fingerprint": body["fingerprint"],
        "fingerprint_label": fingerprint,
        "topology": body.get("topology"),
        "state": body.get("state"),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def _check_named(message: str) -> str | None:
    """The [state-load-validates-first] check a message names (as a whole phrase, anywhere in
    it), or None; a message that names several gives them all, joined by " + " (the clause
    asks for the failed check "and no other", so that never equals an expected check)."""
    named = [check for check in CHECKS if names(message, check)]
    return " + ".join(named) if named else None


def _saved_replicas(data: Any) -> int | None:
    """The ``canonical_replicas`` an envelope's body says it was saved with, or None."""
    try:
        return body_of(data)["topology"]["canonical_replicas"]
    except Exception:  # not an envelope with a readable topology
        return None


def _error(error: BaseException, label: _Labels, replicas: set[int]) -> dict:
    """``replicas``: the two ``canonical_replicas`` values a ``canonical_replicas changed``
    error is about (the saved one and the loader's); other numbers in the message are not
    looked at."""
    message = str(error)
    check = _check_named(message)
    named: list = []
    if check == "fingerprint mismatch":
        named = sorted({label(h) for h in HEX64.findall(message)})
    elif check == "canonical_replicas changed":
        named = sorted(r for r in replicas if names(message, r))
    return {"raised": type(error).__name__, "check": check, "names": named}


def _state_bytes(loader) -> bytes:
    state = loader.state_dict()
    if not (isinstance(state, Mapping) and list(state) == ["zephon"] and isinstance(state["zephon"], bytes)):
        raise clause_failure(
            f"state_dict() returned {state!r}, but should be {{'zephon': bytes}}",
            clause="state-before-start, state-after-start",
        )
    return state["zephon"]


def _argument(action: str, specs: Mapping, saved: Mapping) -> Any:
    """What an action acts on: a pipeline spec, recorded (and corrupted) bytes, a bad
    argument; a mistake in the script raises ``ValueError`` here, outside the backend."""
    verb, _, argument = action.partition(":")
    try:
        if verb == "new":
            return dict(specs[argument])
        if verb == "load":
            name, _, corruptions = argument.partition(":")
            return corrupt(saved[name], filter(None, corruptions.split("+")))
        if verb == "load_arg":
            return BAD_ARGUMENTS[argument]
        if verb == "same":
            return saved[argument]
    except KeyError as error:
        raise ValueError(f"state script action {action!r}: unknown name {error}") from None
    if verb in {"next", "rest", "iter", "iterator", "distributed", "close", "state", "save", "calls", "restores"}:
        return argument
    raise ValueError(f"unknown state script action {action!r}")


def run_state_script(impl: Any, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> dict:
    """Play ``options["script"]`` against ``impl.ZephonDataLoader``; see the module docstring."""
    specs = inputs["pipelines"]
    current_replicas: int | None = None  # the canonical_replicas of the current loader's pipeline
    label = _Labels()
    saved: dict[str, bytes] = {}
    outcomes: dict[str, Any] = {}
    loaders: list = []
    loader: Any = None  # the backend's ZephonDataLoader, once a 'new:P' built one
    spy: SpyPipeline | None = None  # the pipeline of the latest 'new:P'
    with tempfile.TemporaryDirectory(prefix="batchspec-state-") as scratch, zephon_catalog(Path(scratch) / "catalog"):
        try:
            for step, action in enumerate(options["script"]):
                verb = action.partition(":")[0]
                argument = _argument(action, specs, saved)
                if verb == "new":
                    current_replicas = argument.get("canonical_replicas", 1)
                    spy = SpyPipeline(
                        index_pipeline(
                            Path(scratch) / f"step{step}",
                            argument.pop("n"),
                            argument.pop("chunk_size"),
                            argument.pop("policy"),
                            **argument,
                        )
                    )
                    loader = None
                elif loader is None and verb != "new":
                    raise ValueError(f"state script action {action!r} before any successful 'new:P'")
                assert spy is not None  # built by this 'new:P', or by the one that built the loader
                try:
                    if verb == "new":
                        loader = impl.ZephonDataLoader(spy, row_indices, packing_contract=Contract())
                        loaders.append(loader)
                        outcome = None
                    else:
                        outcome = _outcome(verb, argument, loader, spy, saved, label)
                except AssertionError:
                    raise
                except Exception as error:  # recorded and compared
                    involved = (current_replicas, _saved_replicas(argument) if verb == "load" else None)
                    outcome = _error(error, label, {r for r in involved if r is not None})
                outcomes[f"{step} {action}"] = outcome
        finally:
            for each in loaders:
                each.close()
    return {"outcomes": outcomes}


def _outcome(verb: str, argument: Any, loader: Any, spy: SpyPipeline, saved: dict[str, bytes], label: _Labels) -> Any:
    """What one action other than 'new' gives on ``loader`` (see the module docstring); an error
    it raises is recorded by ``run_state_script``."""
    if verb == "next":
        try:
            outcome = next(loader)
        except StopIteration:
            outcome = "StopIteration"
    elif verb == "rest":
        outcome = list(loader)
    elif verb == "iter":
        outcome = iter(loader) is loader
    elif verb == "iterator":
        outcome = isinstance(loader, collections.abc.Iterator)
    elif verb == "distributed":
        outcome = {
            "class": getattr(type(loader), "use_distributed_checkpointing", "<missing>"),
            "instance": getattr(loader, "use_distributed_checkpointing", "<missing>"),
        }
    elif verb == "close":
        outcome = loader.close()
    elif verb == "state":
        outcome = _view(_state_bytes(loader), label)
    elif verb == "save":
        saved[argument] = data = _state_bytes(loader)
        _view(data, label)  # labels its fingerprint
        outcome = "non-empty" if data else "empty"
    elif verb == "same":
        outcome = _state_bytes(loader) == argument
    elif verb in {"load", "load_arg"}:
        outcome = loader.load_state_dict({"zephon": argument} if verb == "load" else argument)
    elif verb == "calls":
        outcome = {"iter": spy.calls["iter"], "checkpoint": spy.calls["checkpoint"]}
    else:  # restores
        outcome = spy.calls["restore"]
    return outcome
