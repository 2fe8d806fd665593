"""Where returned tensors live and what they share, and snapshots of what a call was given.

Helpers of the checks of [tb-device], [tb-no-aliasing] and [collaters-no-mutation]; they never
assert by themselves, so each check words its own failure message:

* ``tensors_in(value)``: every tensor inside nested mappings, lists, tuples and objects, by path;
* ``memory_span(obj)``: the byte range ``[start, end)`` of a tensor's whole storage or of a
  numpy array's data, ``None`` when it holds no byte;
* ``shared_storage(named)``: the pairs of named tensors/arrays whose memory overlaps. Two
  views of one storage overlap even when their elements do not: "share storage" is about the
  storage, so writing through one may be visible through the other;
* ``input_state(value)`` / ``state_changes(before, after)``: a flat snapshot of everything a
  call was given (containers by identity, length and key order; tensors by identity, dtype,
  shape, stride, storage offset, device, data pointer and values; other leaves by type and
  value), and the paths at which two snapshots differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import Any

import numpy as np
import torch

__all__ = ["input_state", "memory_span", "shared_storage", "state_changes", "tensors_in"]


def tensors_in(value: Any, path: str = "") -> dict[str, torch.Tensor]:
    """Every tensor inside ``value`` (nested mappings, lists, tuples, objects' ``__dict__``), by its path.

    A bare tensor is named ``"<value>"``. Objects with a ``__dict__`` (a ``Datum``, a backend's batch
    object) are walked too, so a tensor held as an attribute is never missed.
    """
    if isinstance(value, torch.Tensor):
        return {path or "<value>": value}
    found: dict[str, torch.Tensor] = {}
    if isinstance(value, Mapping):
        items: Iterable = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    elif hasattr(value, "__dict__"):
        items = vars(value).items()
    else:
        return found
    for key, item in items:
        found.update(tensors_in(item, f"{path}.{key}" if path else str(key)))
    return found


def memory_span(obj: Any) -> tuple[int, int] | None:
    """The bytes ``[start, end)`` that a tensor's storage or a numpy array's data occupy."""
    if isinstance(obj, torch.Tensor):
        storage = obj.untyped_storage()
        if storage.nbytes() == 0:
            return None
        start = storage.data_ptr()
        return start, start + storage.nbytes()
    if isinstance(obj, np.ndarray):
        if obj.nbytes == 0:
            return None
        low, high = _byte_bounds(obj)
        return low, high
    raise TypeError(f"memory_span takes a tensor or a numpy array, got {type(obj).__name__}")


def _byte_bounds(array: np.ndarray) -> tuple[int, int]:
    byte_bounds = getattr(np, "byte_bounds", None)  # numpy < 2
    if byte_bounds is not None:
        return byte_bounds(array)
    from numpy.lib.array_utils import byte_bounds as array_utils_byte_bounds  # numpy >= 2 moved it

    return array_utils_byte_bounds(array)


def _same_memory_space(a: Any, b: Any) -> bool:
    """Pointers of two objects are comparable only within one device (numpy is host memory)."""
    device_a = a.device if isinstance(a, torch.Tensor) else torch.device("cpu")
    device_b = b.device if isinstance(b, torch.Tensor) else torch.device("cpu")
    return device_a == device_b


def shared_storage(named: Mapping[str, Any], against: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """Pairs ``(name, other)`` whose memory overlaps: every pair within ``named``, or, with
    ``against``, every pair of one entry of ``named`` and one of ``against``."""
    pairs = (
        combinations(named.items(), 2) if against is None else ((a, b) for a in named.items() for b in against.items())
    )
    found = []
    for (name_a, a), (name_b, b) in pairs:
        if a is None or b is None or not _same_memory_space(a, b):
            continue
        span_a, span_b = memory_span(a), memory_span(b)
        if span_a is None or span_b is None:
            continue
        if span_a[0] < span_b[1] and span_b[0] < span_a[1]:
            found.append((name_a, name_b))
    return found


def _tensor_state(tensor: torch.Tensor) -> tuple:
    return (
        "tensor",
        id(tensor),
        str(tensor.dtype),
        tuple(tensor.shape),
        tuple(tensor.stride()),
        tensor.storage_offset(),
        str(tensor.device),
        tensor.untyped_storage().data_ptr(),
        tensor.detach().cpu().tolist(),
    )


def input_state(value: Any, path: str = "") -> dict[str, tuple]:
    """A flat snapshot ``{path: description}`` of ``value`` and everything inside it."""
    here = path or "<input>"
    if isinstance(value, torch.Tensor):
        return {here: _tensor_state(value)}
    if isinstance(value, np.ndarray):
        return {here: ("ndarray", id(value), value.dtype.str, value.shape, value.strides, value.tolist())}
    state: dict[str, tuple] = {}
    if isinstance(value, Mapping):
        state[here] = (type(value).__name__, id(value), tuple(value.keys()))
        for key, item in value.items():
            state.update(input_state(item, f"{path}[{key!r}]"))
        return state
    if isinstance(value, (list, tuple)):
        state[here] = (type(value).__name__, id(value), len(value))
        for index, item in enumerate(value):
            state.update(input_state(item, f"{path}[{index}]"))
        return state
    return {here: ("value", type(value).__name__, repr(value))}


def state_changes(before: Mapping[str, tuple], after: Mapping[str, tuple]) -> list[str]:
    """The paths at which two ``input_state`` snapshots differ, each with what changed."""
    changes = []
    for path, then in before.items():
        now = after.get(path)
        if now is None:
            changes.append(f"{path} is gone")
        elif now != then:
            changes.append(f"{path}: {_describe(then)} became {_describe(now)}")
    changes.extend(f"{path} was added" for path in after if path not in before)
    return changes


def _describe(state: tuple) -> str:
    kind = state[0]
    if kind == "tensor":
        _, _, dtype, shape, stride, offset, device, _, values = state
        shown = values if len(repr(values)) <= 80 else "…"
        return f"tensor(shape={shape}, stride={stride}, offset={offset}, dtype={dtype}, {device}, {shown})"
    if kind == "ndarray":
        return f"ndarray(dtype={state[2]}, shape={state[3]}, {state[5]})"
    if kind == "value":
        return f"{state[1]} {state[2]}"
    detail = f"keys {list(state[2])}" if isinstance(state[2], tuple) else f"length {state[2]}"
    return f"{kind} object {state[1]} with {detail}"
