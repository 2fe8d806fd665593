"""torch's process-wide settings around the backend: read before a call into it, put back after,
and a change reported on [global-state] (SPEC.md, "Conformance", "Process-wide state").

A backend that calls ``torch.set_default_dtype(torch.float16)`` and leaves it so would make every
later test build its inputs and expected values in float16, and fail there, blamed on clauses
that have nothing to do with it. So the suite reads ``SETTINGS`` before each call into a
contract function (``guard_call``: conformance/run/backends.py wraps every function that
``Backend`` hands out) and around each test's call phase (``guarding_test``: the plugin; it also
catches a change made by a method of the contract's classes, the loader's, or a thread of the
backend's), puts back whatever changed, and reports the change as a failure of
[global-state], a SHOULD clause (a warning, never a failed verdict), of the test whose call
made it (a record of its own beside the test's: conformance/run/result_records.py). Later tests run as
if nothing had happened.

Read: the default dtype, the default device (``torch.set_default_device``), grad mode, the
deterministic-algorithms setting and its warn-only flag, the number of intra-op threads,
anomaly detection and its NaN check, float32 matmul precision, and cuDNN's ``deterministic``
and ``benchmark`` flags. Not read: random number generators (no contract function draws), and
settings only a context manager can hold (inference mode), which a call cannot leave changed
without leaving the context open.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "CLAUSE",
    "SETTINGS",
    "GlobalStateWarning",
    "Setting",
    "Snapshot",
    "failure_message",
    "guard_call",
    "guarding_test",
    "restore",
    "snapshot",
    "take_changes",
    "unusual_settings",
]

# the clause a change of torch's process-wide settings is blamed on (SPEC.md, "Conformance")
CLAUSE = "global-state"


@dataclass(frozen=True)
class Setting:
    """One process-wide setting: its name in a failure message, how to read it and how to set it
    back to a value read before."""

    name: str
    read: Callable[[], Any]
    write: Callable[[Any], None]


def _device_context() -> Any:
    """The device ``torch.set_default_device`` set (None when unset): what restoring needs, where
    ``torch.get_default_device()`` reads "cpu" for both unset and set to the CPU."""
    context = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    return None if context is None else context.device


def _set_deterministic(flags: tuple[bool, bool]) -> None:
    torch.use_deterministic_algorithms(flags[0], warn_only=flags[1])


def _set_grad(enabled: bool) -> None:
    torch.set_grad_enabled(enabled)  # set at construction: a function call, not only a context manager


def _set_anomaly(flags: tuple[bool, bool]) -> None:
    torch.set_anomaly_enabled(flags[0], flags[1])


def _set_cudnn(name: str) -> Callable[[bool], None]:
    return lambda value: setattr(torch.backends.cudnn, name, value)


SETTINGS: tuple[Setting, ...] = (
    Setting("default dtype", torch.get_default_dtype, torch.set_default_dtype),
    Setting("default device", _device_context, torch.set_default_device),
    Setting("grad mode", torch.is_grad_enabled, _set_grad),
    Setting(
        "deterministic algorithms (enabled, warn_only)",
        lambda: (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()),
        _set_deterministic,
    ),
    Setting("number of threads", torch.get_num_threads, torch.set_num_threads),
    Setting(
        "anomaly detection (enabled, check_nan)",
        lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        _set_anomaly,
    ),
    Setting("float32 matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    Setting("cudnn.deterministic", lambda: torch.backends.cudnn.deterministic, _set_cudnn("deterministic")),
    Setting("cudnn.benchmark", lambda: torch.backends.cudnn.benchmark, _set_cudnn("benchmark")),
)


@dataclass(frozen=True)
class Snapshot:
    """The value of every setting of ``SETTINGS``, in that order."""

    values: tuple[Any, ...]

    def changes(self, after: Snapshot) -> list[str]:
        """``"default dtype: torch.float32 -> torch.float16"`` for each setting that differs in
        ``after``; a default device set to what it already was (unset -> the CPU) is no change."""
        return [
            f"{setting.name}: {_shown(setting, old)} -> {_shown(setting, new)}"
            for setting, old, new in zip(SETTINGS, self.values, after.values, strict=True)
            if _shown(setting, old) != _shown(setting, new)
        ]


def _shown(setting: Setting, value: Any) -> str:
    if setting.read is _device_context:
        return str(torch.device("cpu") if value is None else value)
    return str(value)


def snapshot() -> Snapshot:
    """Every setting of ``SETTINGS`` now."""
    return Snapshot(tuple(setting.read() for setting in SETTINGS))


def restore(before: Snapshot) -> None:
    """Set back every setting that differs from ``before``."""
    for setting, old, new in zip(SETTINGS, before.values, snapshot().values, strict=True):
        if old != new:
            setting.write(old)


# the changes calls made since the test's call phase began: "(in get_unpad_data) default dtype: ..."
_changed: list[str] = []


def guard_call(function: Callable[..., Any], name: str, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` (the backend's ``name``), with torch's settings as they were
    before it afterwards, on a return or a raise; a change is kept for ``guarding_test``."""
    before = snapshot()
    try:
        return function(*args, **kwargs)
    finally:
        after = snapshot()
        if after != before:
            _changed.extend(f"{change} (in {name})" for change in before.changes(after))
            restore(before)


def take_changes() -> list[str]:
    """The changes ``guard_call`` saw (and set back) since the test began or since the last
    ``take_changes``; a check that reports them itself takes them so the test's guard does not."""
    taken = list(_changed)
    _changed.clear()
    return taken


@contextmanager
def unusual_settings() -> Iterator[Snapshot]:
    """Inside, settings a user may well have and a process rarely starts with: the default dtype
    float64, grad mode off, deterministic algorithms on (warn only) and float32 matmul precision
    "medium", so that a backend that sets one to torch's default shows the change; yields them,
    and puts back the settings found on entry at the end."""
    before = snapshot()
    try:
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(False)
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.set_float32_matmul_precision("medium")
        yield snapshot()
    finally:
        restore(before)


class GlobalStateWarning(UserWarning):
    """A call into the backend changed torch's process-wide settings and left them so
    ([global-state]); the suite set them back."""


def failure_message(changes: list[str]) -> str:
    """The message of a [global-state] failure that lists ``changes``."""
    return (
        "the backend changed torch's process-wide settings and left them changed: "
        + "; ".join(changes)
        + f" [{CLAUSE}: a call should leave them as it found them; the suite set them back]"
    )


@contextmanager
def guarding_test(found: list[str]) -> Iterator[None]:
    """Around a test's call phase: the settings are put back at its end, whatever the test did,
    and each change that a call into the backend made (``guard_call``) or left there is appended
    to ``found`` and warned about (``GlobalStateWarning``). The test's own outcome is untouched:
    its checks are judged on their clauses, the change on [global-state] (its own record:
    conformance/run/result_records.py, ``global_state_record``)."""
    before = snapshot()
    _changed.clear()
    try:
        yield
    finally:
        after = snapshot()
        left = [f"{change} (during the test)" for change in before.changes(after)]
        if after != before:
            restore(before)
        found.extend(dict.fromkeys([*_changed, *left]))
        _changed.clear()
        if found:
            warnings.warn(failure_message(found), GlobalStateWarning, stacklevel=1)
