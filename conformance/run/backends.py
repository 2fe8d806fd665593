"""Resolving the backend under test and its capability declarations.

A backend is any object (usually a module) that exposes the contract's public names
(``convert_text_batch``, ``build_packed_sequence_metadata``, ...). It is chosen with
``pytest conformance --backend=NAME`` where NAME is a built-in name (``reference``, ``vectorized``, ``automodel``) or a
``module:attribute`` path (``module`` alone means the module itself).

A backend declares the SPEC version it targets in ``BATCHSPEC_SPEC_VERSION`` (e.g. ``"1.0"``);
a backend that declares none, or targets another major version than this suite's SPEC.md, is
refused before any test runs (SPEC.md, "Conformance"). It declares what it implements in
``BATCHSPEC_CAPABILITIES`` (a list, tuple, set or frozenset of the names in ``CAPABILITIES``;
names the suite does not know are allowed and ignored, so a backend can also declare
capabilities of a later minor version; anything else, a generator included, is refused like a
missing ``BATCHSPEC_SPEC_VERSION``). A backend without a declaration is assumed to implement a capability
when it exposes every name that capability needs. A test that needs an undeclared capability
is reported as *not supported* (a skip whose reason starts with ``NOT SUPPORTED``), never as a
pass.

An exception that escapes one of the contract's functions called through ``Backend`` carries
the function's name (``raised_in``): on an input inside the function's contract it is blamed on
the clause that lists the function's faults (SPEC.md, "Raising on a valid input";
``spec_raising_clauses``), not on every clause the test cites.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from batchspec.conformance.run.functions import exported_names, option_only_profiles
from batchspec.conformance.run.spec import major, spec_profile_covers, spec_raising_clauses, spec_version
from batchspec.conformance.run.torch_state import guard_call

__all__ = [
    "BUILTIN_BACKENDS",
    "CAPABILITIES",
    "ENTRY_POINT_GROUP",
    "Backend",
    "BackendError",
    "available_backends",
    "load_backend",
    "raised_in",
]

# capability -> (what it covers: SPEC.md's "Conformance" table, the public names a backend must
# expose for it: from the records of conformance/run/functions.py), in the table's order
CAPABILITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    name: (covers, exported_names(name)) for name, covers in spec_profile_covers().items()
}
# capabilities that cover a function with some options only: never inferred from the names alone
_OPTION_ONLY = option_only_profiles()

# built-in name -> import path
# ("automodel": upstream nemo-automodel 0.7.0's own functions, needs `pip install --no-deps nemo-automodel==0.7.0`)
BUILTIN_BACKENDS: dict[str, str] = {
    "reference": "batchspec.reference",
    "vectorized": "batchspec.backends.vectorized",
    "automodel": "batchspec.backends.automodel",
    "triton": "batchspec.backends.triton",
}
# Third-party packages register backends by name in this entry-point group:
#   [project.entry-points."batchspec.backends"]
#   mybackend = "mypkg.batchspec_backend:BACKEND"
ENTRY_POINT_GROUP = "batchspec.backends"


def available_backends() -> dict[str, str]:
    """Every backend name the suite knows -> its import path: the built-in ones, then those
    installed packages register in the ``batchspec.backends`` entry-point group (a built-in
    name wins over an entry point of the same name)."""
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return {**names, **BUILTIN_BACKENDS}


# the attribute an exception gets when it escapes a contract function called through Backend
_RAISED_IN = "batchspec_raised_in"


@functools.cache
def _raising_clauses() -> dict[str, str]:
    return spec_raising_clauses()


def raised_in(error: BaseException) -> str | None:
    """The contract function (``get_unpad_data``, ...) ``error`` escaped, when it was raised
    by one the suite called through ``Backend``; else None."""
    return getattr(error, _RAISED_IN, None)


def _tagging(function: Any, name: str) -> Any:
    """``function`` (the backend's ``name``), its exceptions tagged with ``name`` (``raised_in``),
    and torch's process-wide settings put back after each call (conformance/run/torch_state.py).
    Whether such an exception is blamed as raised on a valid input is decided when it fails the
    test (conformance/run/failure_blame.py, ``note_raised_on_valid_input``): an error check that catches it
    had an input with a fault."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return guard_call(function, name, *args, **kwargs)  # torch's settings as they were, after
        except Exception as error:
            if raised_in(error) is None:
                try:
                    setattr(error, _RAISED_IN, name)
                except (AttributeError, TypeError):  # an exception type that takes no attributes
                    pass
            raise

    return call


class BackendError(Exception):
    """A backend could not be resolved or declares something unknown."""


@dataclass(frozen=True)
class Backend:
    """The backend under test: its name, version, implementation object and capabilities, and the
    device (``--device``) its tensor functions run on."""

    name: str
    version: str
    capabilities: frozenset[str]
    declared: bool  # True when the backend declared its capabilities itself
    spec_version: str  # the SPEC version the backend targets (BATCHSPEC_SPEC_VERSION)
    impl: Any = field(repr=False)  # the object exposing the contract's names
    ignored: frozenset[str] = frozenset()  # declared names this suite does not know
    # --device: where the tensor functions run (conformance.run.device); "cpu" calls them directly
    device: str = "cpu"

    def supports(self, capability: str) -> bool:
        """Whether the backend implements ``capability`` (a key of ``CAPABILITIES``)."""
        if capability not in CAPABILITIES:
            raise BackendError(f"unknown capability {capability!r}; known: {sorted(CAPABILITIES)}")
        return capability in self.capabilities

    def __getattr__(self, name: str) -> Any:
        # Contract names resolve on the implementation: backend.convert_text_batch(...).
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            value = getattr(self.impl, name)
        except AttributeError:
            raise AttributeError(f"backend {self.name!r} has no attribute {name!r}") from None
        device = vars(self).get("device", "cpu")
        if device != "cpu":
            from batchspec.conformance.run.device import PLACED_FUNCTIONS, placed

            if name in PLACED_FUNCTIONS and callable(value):
                # The tensor functions run on --device, their [tb-device] checked (conformance.run.device).
                value = placed(value, name, device)
        if name in _raising_clauses() and callable(value) and not isinstance(value, type):
            return _tagging(value, name)
        return value


def _import_target(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    module = importlib.import_module(module_name)
    if not attribute:
        return module
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def load_backend(spec: str) -> Backend:
    """Resolve ``--backend`` to a ``Backend``.

    Raises:
        BackendError: an unknown built-in name (the message lists the known ones and the
            ``module:attribute`` form), an import failure, a missing or malformed
            ``BATCHSPEC_SPEC_VERSION``, one whose major version differs from the suite's SPEC, or a
            malformed ``BATCHSPEC_CAPABILITIES`` (``_declared_capabilities``).
    """
    known = available_backends()
    path = known.get(spec, spec)
    try:
        impl = _import_target(path)
    except ModuleNotFoundError as error:
        if spec not in known and ":" not in spec and "." not in spec and error.name == spec:
            # A bare name that is neither known nor an importable module: most likely a typo.
            raise BackendError(
                f"unknown backend {spec!r}; known backends: {sorted(known)} (built in, or registered in the "
                f"{ENTRY_POINT_GROUP!r} entry-point group), or a module / 'module:attribute' path to an object "
                "exposing the contract's names"
            ) from error
        raise BackendError(f"cannot load backend {spec!r} from {path!r}: {error}") from error
    except (ImportError, AttributeError) as error:
        raise BackendError(f"cannot load backend {spec!r} from {path!r}: {error}") from error
    except (Exception, SystemExit) as error:  # the backend's own import code failed
        raise BackendError(
            f"cannot load backend {spec!r} from {path!r}: importing it raised {type(error).__name__}: {error}"
        ) from error

    targets = _targeted_spec_version(spec, impl)
    declared = getattr(impl, "BATCHSPEC_CAPABILITIES", None)
    ignored: frozenset[str] = frozenset()
    if declared is None:
        capabilities = frozenset(
            name
            for name, (_, needed) in CAPABILITIES.items()
            if name not in _OPTION_ONLY and all(hasattr(impl, n) for n in needed)
        )
    else:
        names = _declared_capabilities(spec, declared)
        # Names this suite does not know (a later minor version's profiles) are allowed and ignored.
        capabilities = names & set(CAPABILITIES)
        ignored = names - capabilities
    version = str(getattr(impl, "__version__", "unknown"))
    return Backend(
        name=spec,
        version=version,
        impl=impl,
        capabilities=capabilities,
        declared=declared is not None,
        spec_version=targets,
        ignored=ignored,
    )


def _declared_capabilities(spec: str, declared: Any) -> frozenset[str]:
    """``BATCHSPEC_CAPABILITIES``, read once: a collection (a list, tuple, set or frozenset) of
    capability names (``str``). A one-shot iterator (a generator) is refused, not read: reading
    it would consume the declaration, and every later reader would see no profile at all.

    Raises:
        BackendError: anything else (a number, a string, a mapping, an iterator, a name that is
            not a ``str``), naming what was given.
    """
    if not isinstance(declared, Collection) or isinstance(declared, (str, bytes, bytearray, Mapping)):
        # an iterator's repr names only its address; a one-shot iterator is named as such
        given = "a one-shot iterator" if isinstance(declared, Iterator) else repr(declared)
        raise BackendError(
            f"backend {spec!r}: BATCHSPEC_CAPABILITIES must be a list, tuple, set or frozenset of capability names, "
            f"got {type(declared).__name__} {given}"
        )
    try:
        names = tuple(declared)  # iterated once, here: every reader after this sees these names
    except Exception as error:  # the backend's own collection type failed
        raise BackendError(
            f"backend {spec!r}: reading BATCHSPEC_CAPABILITIES raised {type(error).__name__}: {error}"
        ) from error
    wrong = [name for name in names if not isinstance(name, str)]
    if wrong:
        raise BackendError(
            f"backend {spec!r}: BATCHSPEC_CAPABILITIES must name capabilities as str, got "
            f"{', '.join(f'{type(name).__name__} {name!r}' for name in wrong)} in {declared!r}"
        )
    return frozenset(names)


def _targeted_spec_version(spec: str, impl: Any) -> str:
    """The backend's ``BATCHSPEC_SPEC_VERSION``, checked against this suite's SPEC.md: the
    major versions must be equal (a minor version only adds; SPEC.md "Versioning")."""
    suite = spec_version()
    targets = getattr(impl, "BATCHSPEC_SPEC_VERSION", None)
    if targets is None:
        raise BackendError(
            f"backend {spec!r} does not declare BATCHSPEC_SPEC_VERSION; set it to the SPEC version it "
            f"implements, e.g. BATCHSPEC_SPEC_VERSION = {suite!r} (this suite checks SPEC {suite})"
        )
    try:
        targeted_major = major(targets)
    except ValueError as error:
        raise BackendError(f"backend {spec!r}: BATCHSPEC_SPEC_VERSION={targets!r}: {error}") from None
    if targeted_major != major(suite):
        raise BackendError(
            f"backend {spec!r} targets SPEC {targets}, but this suite checks SPEC {suite}: major versions "
            f"differ ({targeted_major} != {major(suite)}); run the suite release for SPEC {targeted_major}.x"
        )
    return str(targets)
