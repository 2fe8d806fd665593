"""Exact-tensor asserts that explain themselves.

Every message has one shape: ``<what>: <actual>, but should be <expected> [<clause>: <call>]``.
A whole-tensor comparison runs first; only when it fails are the first mismatching indices
listed, with a summary (shape, dtype) of both tensors. Integer tensors must match exactly,
dtype included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

__all__ = ["assert_batch_equal", "assert_keys", "assert_raises", "assert_tensor_equal", "summary"]

MAX_MISMATCHES = 8


def summary(value: Any) -> str:
    """A one-line description: ``Tensor[shape=(2, 8), dtype=torch.int64]`` or the repr."""
    if isinstance(value, torch.Tensor):
        return f"Tensor[shape={tuple(value.shape)}, dtype={value.dtype}]"
    return f"{type(value).__name__} {value!r}"


def _show(value: Any) -> str:
    if isinstance(value, torch.Tensor) and value.numel() <= 64:
        return f"{value.tolist()} ({summary(value)})"
    return summary(value)


def assert_tensor_equal(name: str, actual: Any, expected: torch.Tensor, *, clause: str, call: str = "") -> None:
    """``assert_tensor_equal("labels", out, exp, clause=...)`` is equivalent to
    ``assert out.dtype == exp.dtype and out.shape == exp.shape and torch.equal(out, exp)``."""
    __tracebackhide__ = True
    where = f"[{clause}: {call}]" if call else f"[{clause}]"
    if not isinstance(actual, torch.Tensor):
        raise AssertionError(f"{name}: {summary(actual)}, but should be {summary(expected)} {where}")
    if actual.dtype != expected.dtype:
        raise AssertionError(f"{name}.dtype={actual.dtype}, but should be {expected.dtype} {where}")
    if tuple(actual.shape) != tuple(expected.shape):
        raise AssertionError(
            f"{name}.shape={tuple(actual.shape)}, but should be {tuple(expected.shape)} {where}"
        )
    if torch.equal(actual, expected):
        return
    bad = torch.nonzero(actual != expected, as_tuple=False)[:MAX_MISMATCHES]
    lines = [
        f"{name}[{', '.join(str(int(i)) for i in index)}]={actual[tuple(index)].item()!r}, "
        f"but should be {expected[tuple(index)].item()!r}"
        for index in bad
    ]
    total = int((actual != expected).sum())
    raise AssertionError(
        f"{name}: {total} element(s) differ {where}\n  "
        + "\n  ".join(lines)
        + f"\n  actual:   {_show(actual)}\n  expected: {_show(expected)}"
    )


def assert_batch_equal(
    actual: Mapping[str, Any], expected: Mapping[str, Any], *, clause: str, call: str = "", keys: Any = None
) -> None:
    """Every key of ``expected`` (or only ``keys``) is present in ``actual`` and equal to it,
    tensors exactly (dtype included), other values with ``==`` and the same type."""
    __tracebackhide__ = True
    where = f"[{clause}: {call}]" if call else f"[{clause}]"
    for key in expected if keys is None else keys:
        if key not in actual:
            raise AssertionError(f"key {key!r} is missing, but should be present; keys: {sorted(actual)} {where}")
        value, want = actual[key], expected[key]
        if isinstance(want, torch.Tensor):
            assert_tensor_equal(key, value, want, clause=clause, call=call)
        elif type(value) is not type(want) or value != want:
            raise AssertionError(f"{key}={summary(value)}, but should be {summary(want)} {where}")


def assert_raises(error_type: type[BaseException], fields: tuple[str, ...], func, *args, clause: str, **kwargs) -> BaseException:
    """Calling ``func`` must raise ``error_type`` (or a subclass) whose message names every
    string in ``fields``. Separates "nothing raised" from "wrong error" and "vague message"."""
    __tracebackhide__ = True
    call = f"{getattr(func, '__name__', func)}(...)"
    try:
        func(*args, **kwargs)
    except error_type as error:
        message = str(error)
        missing = [f for f in fields if f not in message]
        if missing:
            raise AssertionError(
                f"{type(error).__name__} message {message!r} does not name {missing} [{clause}: {call}]"
            ) from error
        return error
    except Exception as error:  # noqa: BLE001 - report the wrong type
        raise AssertionError(
            f"raised {type(error).__name__}({error}), but should raise {error_type.__name__} [{clause}: {call}]"
        ) from error
    raise AssertionError(f"nothing was raised, but should raise {error_type.__name__} [{clause}: {call}]")


def assert_keys(out: Mapping[str, Any], keys: list[str], *, clause: str, call: str) -> None:
    """``assert_keys(out, keys, ...)`` is equivalent to ``assert list(out) == keys``: the same
    keys in the same order."""
    __tracebackhide__ = True
    if list(out) != keys:
        raise AssertionError(f"keys {list(out)}, but should be {keys} (in this order) [{clause}: {call}]")
