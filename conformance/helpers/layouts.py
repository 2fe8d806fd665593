"""Memory layouts of tensor inputs, for the checks of [tb-layout].

SPEC's [tb-layout] requires every function to read a tensor input by its values: a transposed
tensor, one sliced with a step, one expanded with a stride of 0, a view at a storage offset, a
channels-last tensor, or a numpy array with such strides gives exactly what its contiguous
copy gives. ``laid_out(value)`` draws such a copy of ``value``: the same values, dtype, shape
and device, in a layout of ``LAYOUTS`` that ``value``'s shape and values allow
(``layouts_for``), written into a new buffer whose other elements hold a drawn filler value
(what a kernel that ignores strides or the storage offset reads instead of the real values).
``describe_layout`` names a layout for failure messages (shape, dtype, strides, storage
offset).

The layouts (torch tensors; numpy arrays have ``offset``, ``step`` and ``expanded``):

* ``offset``: contiguous, but a view at storage offset ``pad`` >= 1 of a larger buffer;
* ``step``: dimension ``dim`` (of size > 1) read with a stride ``step`` (2 or 3) times its
  contiguous stride, as ``buffer[..., ::step]``;
* ``transposed``: the dimensions stored in reverse order (column-major for ``[B, S]``, as
  ``x.t().contiguous().t()``), which needs two dimensions of size > 1;
* ``expanded``: a stride of 0 along a dimension of size > 1 whose slices are all equal (a
  batch of identical rows, a constant 1-D field), as ``row.expand(...)``;
* ``channels_last``: a 4-D ``[N, C, H, W]`` tensor in ``torch.channels_last`` order, which
  differs from the contiguous layout only when ``C > 1`` and ``H * W > 1`` (torch ignores the
  stride of a dimension of size 1, so a one-channel ``[B, 1, S, S]`` mask in channels-last
  order *is* contiguous; such a tensor gets the other layouts).

Every layout but ``offset`` may also sit at a drawn storage offset. The helper checks what it
builds: a copy that is not equal to ``value`` or not in the promised layout (contiguous at
storage offset 0) is a ``SuiteError``, the suite's own fault, blamed on no clause.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from batchspec.conformance.helpers.asserts import SuiteError

__all__ = ["LAYOUTS", "describe_layout", "laid_out", "layouts_for", "relayout", "storage_offset"]

LAYOUTS: tuple[str, ...] = ("offset", "step", "transposed", "expanded", "channels_last")
STEPS: tuple[int, ...] = (2, 3)
MAX_PAD = 5


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape``, in elements."""
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return tuple(reversed(strides))


def _big_dims(shape: tuple[int, ...]) -> list[int]:
    """The dimensions of size > 1: the only ones whose stride decides contiguity."""
    return [d for d, size in enumerate(shape) if size > 1]


def _equal_along(value: Any, dim: int) -> bool:
    """Whether every slice of ``value`` along ``dim`` equals the first (stride 0 keeps the values)."""
    if isinstance(value, torch.Tensor):
        return bool(torch.equal(value, value.narrow(dim, 0, 1).expand_as(value)))
    return bool(np.array_equal(value, np.broadcast_to(np.take(value, [0], axis=dim), value.shape)))


def _expandable_dims(value: Any) -> list[int]:
    return [d for d in _big_dims(tuple(value.shape)) if _equal_along(value, d)]


def layouts_for(value: Any) -> tuple[str, ...]:
    """The layouts of ``LAYOUTS`` in which ``value`` (a tensor, or a numpy array) can be stored
    other than contiguously at offset 0 with its values kept; ``offset`` (last) fits every value."""
    shape = tuple(value.shape)
    kinds = []
    if _big_dims(shape):
        kinds.append("step")
    if isinstance(value, torch.Tensor) and len(_big_dims(shape)) >= 2:
        kinds.append("transposed")
    if _expandable_dims(value):
        kinds.append("expanded")
    if isinstance(value, torch.Tensor) and value.ndim == 4 and shape[1] > 1 and shape[2] * shape[3] > 1:
        kinds.append("channels_last")
    return (*kinds, "offset")  # the non-contiguous layouts first: hypothesis favours the first


def _strides(shape: tuple[int, ...], layout: str, dim: int, step: int) -> tuple[int, ...]:
    """The element strides of ``layout`` (``expanded`` aside) for ``shape``."""
    if layout == "offset":
        return _contiguous_strides(shape)
    if layout == "step":
        wide = list(shape)
        wide[dim] *= step
        strides = list(_contiguous_strides(tuple(wide)))
        strides[dim] *= step
        return tuple(strides)
    if layout == "transposed":
        return tuple(reversed(_contiguous_strides(tuple(reversed(shape)))))
    if layout == "channels_last":
        n, c, h, w = shape
        return (h * w * c, 1, w * c, c)
    raise ValueError(f"unknown layout {layout!r}; known: {LAYOUTS}")


def _span(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """The elements a view of ``shape`` and ``strides`` reaches from its first one."""
    if any(size == 0 for size in shape):
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


def storage_offset(value: Any) -> int:
    """A tensor's storage offset, or a numpy array's offset (in elements) into the buffer it
    is a view of (0 for an array that owns its data)."""
    if isinstance(value, torch.Tensor):
        return int(value.storage_offset())  # an int (the SymInt its type allows is for symbolic tracing)
    base = value  # walk to the buffer this array views (as_strided puts a wrapper in between)
    while getattr(base, "base", None) is not None and hasattr(base.base, "__array_interface__"):
        base = base.base
    start = value.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return start // value.itemsize if value.itemsize else 0


def describe_layout(value: Any) -> str:
    """``Tensor[shape=(2, 3), dtype=torch.int64, strides=(1, 2), storage_offset=4, non-contiguous]``
    (a numpy array's strides in elements, its offset into the buffer it views)."""
    if isinstance(value, torch.Tensor):
        kind, dtype, strides, contiguous = "Tensor", value.dtype, tuple(value.stride()), value.is_contiguous()
    else:
        itemsize = value.itemsize or 1
        kind, dtype = "ndarray", value.dtype
        strides, contiguous = tuple(s // itemsize for s in value.strides), bool(value.flags.c_contiguous)
    return (
        f"{kind}[shape={tuple(value.shape)}, dtype={dtype}, strides={strides}, "
        f"storage_offset={storage_offset(value)}, {'contiguous' if contiguous else 'non-contiguous'}]"
    )


def relayout(value: Any, layout: str, *, dim: int | None = None, step: int = 2, pad: int = 0, fill: Any = 0) -> Any:
    """A copy of ``value`` (a tensor, or a numpy array) with equal values, dtype, shape and
    device, stored in ``layout`` at storage offset ``pad`` of a new buffer whose other elements
    hold ``fill``. ``dim``: the dimension read with a step (``step``) or a stride of 0
    (``expanded``); the first that fits when ``None``.

    Raises:
        SuiteError: ``layout`` does not fit ``value`` (see ``layouts_for``), or the copy is not
            equal to ``value`` or is contiguous at offset 0 (the helper's own fault).
    """
    if layout not in layouts_for(value):
        raise SuiteError(f"layout {layout!r} does not fit {describe_layout(value)}; it fits {layouts_for(value)}")
    if layout == "offset" and pad < 1:
        raise SuiteError("layout 'offset' needs pad >= 1")
    shape = tuple(value.shape)
    if dim is None and layout in ("step", "expanded"):
        dim = (_big_dims(shape) if layout == "step" else _expandable_dims(value))[0]
    if layout == "expanded":
        assert dim is not None  # chosen above when not given
        narrow_shape = tuple(1 if d == dim else size for d, size in enumerate(shape))
        narrow_strides = _contiguous_strides(narrow_shape)
        base = _write(value, narrow_shape, narrow_strides, pad, fill, part=("narrow", dim))
        expanded_strides = list(narrow_strides)
        expanded_strides[dim] = 0
        out = _view(base, shape, tuple(expanded_strides), pad)
    else:
        strides = _strides(shape, layout, dim if dim is not None else 0, step)
        out = _write(value, shape, strides, pad, fill)
    _check(value, out, layout)
    return out


def _view(buffer: Any, shape: tuple[int, ...], strides: tuple[int, ...], pad: int) -> Any:
    if isinstance(buffer, torch.Tensor):
        return torch.as_strided(buffer, shape, strides, pad)
    itemsize = buffer.itemsize
    return np.lib.stride_tricks.as_strided(buffer[pad:], shape, tuple(s * itemsize for s in strides))


def _write(value: Any, shape: tuple[int, ...], strides: tuple[int, ...], pad: int, fill: Any, part=None) -> Any:
    """A view of ``shape``/``strides`` at offset ``pad`` of a new buffer filled with ``fill``,
    holding ``value`` (or, with ``part=("narrow", d)``, its first slice along ``d``)."""
    source = value
    if part is not None:
        source = value.narrow(part[1], 0, 1) if isinstance(value, torch.Tensor) else np.take(value, [0], axis=part[1])
    size = pad + _span(shape, strides)
    if isinstance(value, torch.Tensor):
        buffer = torch.full((size,), fill, dtype=value.dtype, device=value.device)
        view = torch.as_strided(buffer, shape, strides, pad)
        view.copy_(source)
        return buffer if part is not None else view
    array = np.full(size, fill, dtype=value.dtype)
    view = _view(array, shape, strides, pad)
    view[...] = source
    return array if part is not None else view


def _check(value: Any, out: Any, layout: str) -> None:
    """The copy holds ``value``'s values in ``layout`` (the suite's own check)."""
    if isinstance(value, torch.Tensor):
        same = out.dtype == value.dtype and out.shape == value.shape and bool(torch.equal(out, value))
        moved = out.is_contiguous() and out.storage_offset() == 0
        if layout == "channels_last" and not out.is_contiguous(memory_format=torch.channels_last):
            moved = True
    else:
        same = out.dtype == value.dtype and out.shape == value.shape and bool(np.array_equal(out, value))
        moved = bool(out.flags.c_contiguous) and storage_offset(out) == 0
    if layout == "expanded" and 0 not in tuple(out.stride() if isinstance(out, torch.Tensor) else out.strides):
        moved = True
    if not same or moved:
        raise SuiteError(
            f"relayout({layout!r}) built {describe_layout(out)} from {describe_layout(value)}: "
            f"{'the values differ' if not same else 'not the promised layout'}"
        )


def _fillers(dtype: Any) -> tuple:
    """Values the buffer around the real elements holds: junk a kernel reading storage sees."""
    if isinstance(dtype, torch.dtype):
        if dtype == torch.bool:
            return (True, False)
        if dtype.is_floating_point:
            return (0.0, 1.5, -2.0)
        info: torch.iinfo | np.iinfo = torch.iinfo(dtype)
    else:
        kind = np.dtype(dtype).kind
        if kind == "b":
            return (True, False)
        if kind == "f":
            return (0.0, 1.5, -2.0)
        info = np.iinfo(dtype)
    return tuple(v for v in (0, 1, 2, 7, -1, int(info.max)) if info.min <= v <= info.max)


@st.composite
def laid_out(draw: st.DrawFn, value: Any, layouts: tuple[str, ...] = LAYOUTS) -> Any:
    """A copy of ``value`` (tensor or numpy array) in a drawn layout of ``layouts`` that fits it
    (``layouts_for``; ``offset`` fits every value), at a drawn storage offset, with a drawn
    filler around its elements (``relayout``)."""
    kinds = [kind for kind in layouts_for(value) if kind in layouts] or ["offset"]
    layout = draw(st.sampled_from(kinds), label="layout")
    pad = draw(st.integers(1 if layout == "offset" else 0, MAX_PAD), label="storage_offset")
    dim = None
    if layout in ("step", "expanded"):
        dims = _big_dims(tuple(value.shape)) if layout == "step" else _expandable_dims(value)
        dim = draw(st.sampled_from(dims), label="dim")
    step = draw(st.sampled_from(STEPS), label="step") if layout == "step" else 2
    fill = draw(st.sampled_from(_fillers(value.dtype)), label="filler")
    return relayout(value, layout, dim=dim, step=step, pad=pad, fill=fill)
