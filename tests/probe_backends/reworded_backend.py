"""The reference with every error message reworded: a fairness probe for the suite.

SPEC 1.0 makes error *types* and the *facts* a message names normative, never the sentence
around them. This backend is the reference, except that every exception raised by code in
the ``reference`` package is re-raised as the same type with a new message that keeps only
the facts of the original, in reverse order, inside a different sentence:

    ValueError [reworded backend] facts: 3, 'bshd', output_format

A conformance check that still passes against this backend asserts the type and the facts,
not the wording; one that fails is unfair (or the clause pins wording it should not).

Facts kept: the ``[state-load-validates-first]`` check names (``truncated``, ``bad magic``,
...), quoted values and reprs (``'bshd'``, ``b'XSZSTATE'``), bracketed data (``[4, 11]``,
``(1, 3)``, ``()``, ``['input_ids', 'tokens']``), 64-hex fingerprints, ``torch.<dtype>``,
numbers, and identifiers that contain an underscore or are names SPEC.md writes in backticks
(``positions``, ``records``, ``state``, ...), dotted ones whole (``meta.padding_length``).
Everything else (the prose) is dropped. Prose inside brackets is dropped too; facts inside it
are kept.

Left untouched: ``StopIteration``, ``KeyError`` and ``IndexError`` (their message is the key
or index), exceptions raised outside the reference package (Zephon, torch internals, the
test's own injected errors, which must propagate as the very same object), and exceptions
already reworded. ``__cause__``, ``__context__``, ``__suppress_context__`` and the traceback
are carried over.

Use: ``PYTHONPATH=tests/probe_backends:. pytest conformance --backend=reworded_backend``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from batchspec import reference as _reference

__version__ = "reworded-0"
BATCHSPEC_CAPABILITIES = _reference.BATCHSPEC_CAPABILITIES
BATCHSPEC_SPEC_VERSION = "1.0"

_REFERENCE_DIR = Path(_reference.__file__).resolve().parent
_SPEC = Path(__file__).resolve().parents[2] / "SPEC.md"
# The [state-load-validates-first] check names: a clause pins them, so they are facts.
CHECK_NAMES = (
    "truncated",
    "bad magic",
    "unsupported version",
    "checksum mismatch",
    "malformed body",
    "fingerprint mismatch",
    "canonical_replicas changed",
)
UNTOUCHED = (StopIteration, StopAsyncIteration, KeyError, IndexError)
MARK = "_batchspec_reworded"


def _spec_names() -> frozenset[str]:
    """Plain names SPEC.md writes as code (`positions`, `records`, ...), without one-letter
    notation and exception class names."""
    try:
        text = _SPEC.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    names = set()
    for match in re.finditer(r"`([A-Za-z_][A-Za-z0-9_.]*)`", text):
        for part in match.group(1).split("."):
            if len(part) >= 3 and not part.endswith(("Error", "Iteration")):
                names.add(part)
    return frozenset(names)


SPEC_NAMES = _spec_names()

_QUOTED = r"b?'(?:[^'\\]|\\.)*'|b?\"(?:[^\"\\]|\\.)*\""
_TOKEN = re.compile(
    "|".join(
        [
            "(?P<check>" + "|".join(re.escape(c) for c in CHECK_NAMES) + ")",
            f"(?P<quoted>{_QUOTED})",
            r"(?P<open>[\[({])",
            r"(?P<hex>(?<![0-9A-Za-z_])[0-9a-f]{64}(?![0-9A-Za-z_]))",
            r"(?P<dtype>(?<![A-Za-z0-9_.])torch\.[a-z][a-z0-9_]*)",
            r"(?P<number>(?<![A-Za-z0-9_.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![A-Za-z0-9_]))",
            r"(?P<name>(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)",
        ]
    )
)
_CLOSING = {"[": "]", "(": ")", "{": "}"}
_DATA = re.compile(r"^[\s\d,.:\-+\[\](){}e]*$")  # what is left of bracketed data once strings are removed


def _group_end(text: str, start: int) -> int:
    """The index just after the bracket group opening at ``start`` (quotes respected), or -1."""
    stack = []
    i = start
    while i < len(text):
        char = text[i]
        if char in "'\"":
            match = re.compile(_QUOTED).match(text, i)
            if match:
                i = match.end()
                continue
        if char in _CLOSING:
            stack.append(_CLOSING[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return -1


def facts(message: str) -> list[str]:
    """The facts of an error message, in order of appearance, each once."""
    found: list[str] = []

    def scan(text: str) -> None:
        position = 0
        while True:
            match = _TOKEN.search(text, position)
            if match is None:
                return
            kind = match.lastgroup
            if kind == "open":
                end = _group_end(text, match.start())
                if end == -1:  # an unbalanced bracket: look inside it
                    position = match.end()
                    continue
                group = text[match.start() : end]
                if _DATA.match(re.sub(_QUOTED, "", group)):
                    found.append(group)  # data: a shape, a list of lengths or names
                else:
                    scan(group[1:-1])  # prose in brackets: keep only its facts
                position = end
                continue
            token = match.group()
            if kind == "name" and not any("_" in part or part in SPEC_NAMES for part in token.split(".")):
                position = match.end()
                continue
            found.append(token)
            position = match.end()

    scan(message)
    return list(dict.fromkeys(found))


def reword(message: str, error_type: type[BaseException]) -> str:
    """The new message: the facts of ``message`` in reverse order, in another sentence."""
    kept = facts(message)
    if not kept:
        return f"{error_type.__name__} [reworded backend] no facts"
    return f"{error_type.__name__} [reworded backend] facts: " + ", ".join(reversed(kept))


def _raised_in_reference(error: BaseException) -> bool:
    """Whether the innermost Python frame of ``error``'s traceback is reference code."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    try:
        return Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(_REFERENCE_DIR)
    except (OSError, ValueError):
        return False


def _reworded(error: BaseException) -> BaseException | None:
    """The replacement of ``error``, or ``None`` to let it through unchanged."""
    if (
        not isinstance(error, Exception)
        or isinstance(error, UNTOUCHED)
        or getattr(error, MARK, False)
        or not _raised_in_reference(error)
    ):
        return None
    try:
        new = type(error)(reword(str(error), type(error)))
    except Exception:  # a type that cannot be built from one message stays as it is
        return None
    setattr(new, MARK, True)
    new.__cause__ = error.__cause__
    new.__context__ = error.__context__
    new.__suppress_context__ = error.__suppress_context__
    return new.with_traceback(error.__traceback__)


def _wrap(function: Any) -> Any:
    """``function`` with reference errors reworded."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except BaseException as error:  # re-raised, reworded or not
            new = _reworded(error)
            if new is None:
                raise
        raise new  # outside the except block, so the original is not chained as context

    return wrapper


def _wrapped_class(cls: type, methods: tuple[str, ...]) -> type:
    """A subclass of ``cls`` whose ``methods`` reword reference errors."""
    namespace = {"__module__": __name__, "__doc__": cls.__doc__, "__qualname__": cls.__qualname__}
    for name in methods:
        namespace[name] = _wrap(getattr(cls, name))
    return type(cls.__name__, (cls,), namespace)


ZephonDataLoader = _wrapped_class(
    _reference.ZephonDataLoader, ("__init__", "__iter__", "__next__", "state_dict", "load_state_dict", "close")
)
Datum = _wrapped_class(_reference.Datum, ("__init__", "to_features"))

_CLASSES = {"ZephonDataLoader": ZephonDataLoader, "Datum": Datum}


def _public(name: str) -> Any:
    value = getattr(_reference, name)
    if name in _CLASSES:
        return _CLASSES[name]
    if (
        callable(value)
        and not isinstance(value, type)
        and getattr(value, "__module__", "").startswith("batchspec.reference")
    ):
        return _wrap(value)
    return value


for _name in _reference.__all__:
    if _name not in {"BATCHSPEC_CAPABILITIES", "BATCHSPEC_SPEC_VERSION"}:
        globals()[_name] = _public(_name)

__all__ = [*_reference.__all__]
if "BATCHSPEC_SPEC_VERSION" not in __all__:
    __all__.append("BATCHSPEC_SPEC_VERSION")


def __getattr__(name: str) -> Any:
    """Any other reference name, wrapped the same way."""
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return _public(name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
