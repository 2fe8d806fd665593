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
  call was given (containers by identity, length and key order; objects (a ``SampleBatch``, its
  records and meta, a ``Datum``) by identity and by each attribute; tensors by identity, dtype,
  shape, stride, storage offset, device, data pointer and values; numpy arrays by identity,
  dtype, shape, strides, data pointer and values; other leaves by type and value), and the paths
  at which two snapshots differ. The one input-mutation snapshot of the suite: golden cases
  ([ctb-no-mutation], [loader-next]), the SampleBatch checks and the collater checks all use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import Any

import numpy as np
import torch

__all__ = ["input_state", "listed_changes", "memory_span", "shared_storage", "state_changes", "tensors_in"]


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
    """A flat snapshot ``{path: description}`` of ``value`` and everything reachable from it.

    Mappings, lists and tuples are described by type, identity and keys or length; a dataclass
    (Zephon's ``SampleBatch``, ``SampleRecord``, ``SampleMeta``) by type, identity and the fields
    that make up its value (``compare=True``: a lazily filled cache such as ``SampleBatch._ids``
    is not the input); any other object with a ``__dict__`` by type, identity and attribute names;
    each then walked into. Tensors and numpy arrays are leaves described by identity, layout,
    data pointer and values; anything else by type and ``repr``. An object met again on its own
    path (a cycle) is described, not walked again. Two snapshots compare with ``state_changes``.
    """
    return _state(value, path, frozenset())


def _state(value: Any, path: str, walking: frozenset[int]) -> dict[str, tuple]:
    here = path or "<input>"
    if isinstance(value, torch.Tensor):
        return {here: _tensor_state(value)}
    if isinstance(value, np.ndarray):
        return {here: _array_state(value)}
    children = _children(value, path)
    if children is None:
        return {here: ("value", type(value).__name__, repr(value))}
    detail, items = children
    state: dict[str, tuple] = {here: (type(value).__name__, id(value), detail)}
    if id(value) in walking:
        return state
    for child_path, item in items:
        state.update(_state(item, child_path, walking | {id(value)}))
    return state


def _children(value: Any, path: str) -> tuple[Any, list[tuple[str, Any]]] | None:
    """``(detail, [(path, item), ...])`` of a container or object, ``None`` for a leaf."""
    if isinstance(value, Mapping):
        return tuple(value.keys()), [(f"{path}[{key!r}]", item) for key, item in value.items()]
    if isinstance(value, (list, tuple)):
        return len(value), [(f"{path}[{index}]", item) for index, item in enumerate(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = tuple(field.name for field in dataclasses.fields(value) if field.compare)
    elif hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
        names = tuple(vars(value))
    else:
        return None
    return names, [(f"{path}.{name}" if path else name, getattr(value, name)) for name in names]


def _array_state(array: np.ndarray) -> tuple:
    return (
        "ndarray",
        id(array),
        array.dtype.str,
        array.shape,
        array.strides,
        array.__array_interface__["data"][0],
        array.tolist(),
    )


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


SHOWN_CHANGES = 8
"""How many changed paths a failure message lists."""


def listed_changes(changes: list[str]) -> str:
    """``state_changes``' first ``SHOWN_CHANGES`` paths, one per indented line (with a leading
    colon and newline, to follow a failure's message)."""
    return ":\n  " + "\n  ".join(changes[:SHOWN_CHANGES])


def _describe(state: tuple) -> str:
    kind = state[0]
    if kind == "tensor":
        _, _, dtype, shape, stride, offset, device, _, values = state
        shown = values if len(repr(values)) <= 80 else "…"
        return f"tensor(shape={shape}, stride={stride}, offset={offset}, dtype={dtype}, {device}, {shown})"
    if kind == "ndarray":
        _, _, dtype, shape, strides, _, values = state
        shown = values if len(repr(values)) <= 80 else "…"
        return f"ndarray(dtype={dtype}, shape={shape}, strides={strides}, {shown})"
    if kind == "value":
        return f"{state[1]} {state[2]}"
    detail = f"keys/fields {list(state[2])}" if isinstance(state[2], tuple) else f"length {state[2]}"
    return f"{kind} object {state[1]} with {detail}"
