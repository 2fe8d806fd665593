"""``BATCHSPEC_CAPABILITIES`` is read once and refused when malformed (conformance/run/backends.py):
the planted declarations of ``tests/probe_backends/capability_backends.py``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from batchspec import reference
from batchspec.conformance.run import backends
from batchspec.conformance.run.backends import BackendError, load_backend

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture
def probes(monkeypatch):
    for folder in ("mutants", "probe_backends"):
        monkeypatch.syspath_prepend(str(TESTS / folder))
    import capability_backends

    return capability_backends


def test_a_generator_is_refused_and_left_unconsumed(probes):
    with pytest.raises(
        BackendError, match=r"BATCHSPEC_CAPABILITIES must be a list, tuple, set or frozenset"
    ) as refusal:
        load_backend("capability_backends:GENERATOR")
    assert "generator" in str(refusal.value) and "'capability_backends:GENERATOR'" in str(refusal.value)
    # refusing it did not read it: the backend's own declaration is intact
    assert frozenset(probes.GENERATOR.BATCHSPEC_CAPABILITIES) == reference.BATCHSPEC_CAPABILITIES


@pytest.mark.parametrize(("name", "words"), [("NUMBER", "got int 42"), ("NOT_NAMES", "got int 7 in ['unpad_data', 7]")])
def test_a_malformed_declaration_is_a_backend_error_naming_what_was_given(probes, name, words):
    with pytest.raises(BackendError, match="BATCHSPEC_CAPABILITIES") as refusal:
        load_backend(f"capability_backends:{name}")
    assert words in str(refusal.value)


class _Once:
    """A collection whose iteration counts its readers."""

    def __init__(self, names):
        self.names, self.reads = list(names), 0

    def __len__(self):
        return len(self.names)

    def __contains__(self, name):
        return name in self.names

    def __iter__(self):
        self.reads += 1
        return iter(self.names)


@pytest.mark.parametrize(
    "declared",
    [["unpad_data", "future_profile"], ("unpad_data", "future_profile"), {"unpad_data", "future_profile"}],
    ids=["list", "tuple", "set"],
)
def test_collections_of_names_are_accepted_and_read_once(monkeypatch, declared):
    once = _Once(declared)
    module = SimpleNamespace(
        get_unpad_data=reference.get_unpad_data,
        BATCHSPEC_SPEC_VERSION=reference.BATCHSPEC_SPEC_VERSION,
        BATCHSPEC_CAPABILITIES=once,
    )
    monkeypatch.setattr(backends, "_import_target", lambda path: module)
    backend = load_backend("stand_in")
    assert backend.capabilities == frozenset({"unpad_data"}) and backend.ignored == frozenset({"future_profile"})
    assert backend.declared and once.reads == 1


@pytest.mark.parametrize("declared", ["unpad_data", b"unpad_data", {"unpad_data": True}, iter(["unpad_data"])])
def test_strings_mappings_and_iterators_are_refused(monkeypatch, declared):
    module = SimpleNamespace(BATCHSPEC_SPEC_VERSION=reference.BATCHSPEC_SPEC_VERSION, BATCHSPEC_CAPABILITIES=declared)
    monkeypatch.setattr(backends, "_import_target", lambda path: module)
    with pytest.raises(BackendError, match=f"got {type(declared).__name__} "):
        load_backend("stand_in")
