"""The relation [tb-layout] states, as the layout checks use it (conformance/test_layouts.py,
test_layouts_collaters.py): a function called on inputs stored in non-contiguous layouts
(``lay_out``; the layouts: ``conformance/helpers/layouts.py``) behaves as on their contiguous
copies: the same outputs key by key (``assert_same_output``), the same error type where SPEC
lets the drawn input raise (``assert_same_behaviour``), and the non-contiguous inputs left
unchanged unless the contiguous ones change too (``assert_unmodified``). ``compare`` does all
three; a difference raises ``ClauseFailure`` on [tb-layout].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from hypothesis import strategies as st

from batchspec.conformance.helpers.asserts import ClauseFailure, assert_equal, clause_failure, summary
from batchspec.conformance.helpers.layouts import describe_layout, laid_out
from batchspec.conformance.helpers.storage import input_state, listed_changes, state_changes

__all__ = [
    "Ran",
    "assert_same_behaviour",
    "assert_same_output",
    "assert_unmodified",
    "compare",
    "describe_inputs",
    "draw_grid",
    "lay_out",
    "layout_failure",
    "run",
    "snapshot",
    "tensor_function",
]

SHOWN = 64  # a laid-out input's values are listed up to this many elements


# --- the relation: the non-contiguous input behaves as its contiguous copy ----------------------


class Ran(NamedTuple):
    """One call's result, or the exception it raised."""

    value: Any
    error: BaseException | None


def run(function: Callable, *args: Any, **kwargs: Any) -> Ran:
    try:
        return Ran(function(*args, **kwargs), None)
    except Exception as error:  # compared with the other call's behaviour
        return Ran(None, error)


def _copy(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value.copy()


def _contiguous_copy(value: Any, device: str) -> Any:
    """A new contiguous tensor (on ``device``) or C-contiguous array at offset 0 holding ``value``."""
    if isinstance(value, torch.Tensor):
        return value.to(device).clone(memory_format=torch.contiguous_format)
    return np.array(value, order="C", copy=True)


def _values(value: Any) -> str:
    if isinstance(value, (torch.Tensor, np.ndarray)) and int(np.prod(value.shape)) <= SHOWN:
        return repr(value.tolist())
    return summary(value)


def lay_out(data, tensors: Mapping[str, Any], device: str = "cpu") -> tuple[dict[str, Any], dict[str, Any]]:
    """Two private copies of ``tensors`` (tensors and numpy arrays, by name): contiguous ones (torch
    tensors on ``device``) and laid-out ones, where a drawn non-empty subset is stored in drawn
    non-contiguous layouts and the rest are plain copies."""
    contiguous = {name: _contiguous_copy(value, device) for name, value in tensors.items()}
    chosen = data.draw(st.lists(st.sampled_from(sorted(contiguous)), min_size=1, unique=True), label="laid out")
    laid = {
        name: data.draw(laid_out(value), label=f"layout of {name}") if name in chosen else _copy(value)
        for name, value in contiguous.items()
    }
    return contiguous, laid


def draw_grid(data, shape: tuple[int, ...], cell: st.SearchStrategy, label: str) -> list:
    """A flat list of ``prod(shape)`` values drawn from ``cell`` (reshape it to ``shape``)."""
    size = int(np.prod(shape))
    return data.draw(st.lists(cell, min_size=size, max_size=size), label=label)


def describe_inputs(laid: Mapping[str, Any]) -> str:
    """Each input's values and how it is stored."""
    return "; ".join(f"{name}={_values(value)} stored as {describe_layout(value)}" for name, value in laid.items())


def layout_failure(message: str, call: str) -> ClauseFailure:
    """A failure of [tb-layout] in ``call``."""
    return clause_failure(f"{message}", clause="tb-layout", call=call)


def assert_same_output(actual: Any, expected: Any, *, call: str, names: Sequence[str] | None = None) -> None:
    """The non-contiguous call's output equals the contiguous call's: the same keys (or, with
    ``names``, a tuple of that many items), each value exactly (``assert_equal``)."""
    __tracebackhide__ = True
    if names is not None:
        if not isinstance(actual, tuple) or len(actual) != len(names):
            raise layout_failure(
                f"output: {summary(actual)}, but should be a {len(names)}-tuple as for the contiguous copy", call
            )
        actual, expected = dict(zip(names, actual)), dict(zip(names, expected))
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping) or set(actual) != set(expected):
            shown = sorted(actual) if isinstance(actual, Mapping) else summary(actual)
            raise layout_failure(
                f"output keys {shown}, but should be {sorted(expected)} as for the contiguous copy", call
            )
        for key, want in expected.items():
            assert_equal(actual[key], want, clause="tb-layout", call=call, path=str(key))
        return
    assert_equal(actual, expected, clause="tb-layout", call=call)


def assert_same_behaviour(
    expected: Ran, actual: Ran, *, call: str, errors: tuple[type[BaseException], ...] = (), names=None
) -> bool:
    """``actual`` (the non-contiguous input's call) behaves as ``expected`` (its contiguous
    copy's): an error of one of ``errors`` (those SPEC lets this drawn input raise) is raised
    with the same type; a result is returned, equal (``assert_same_output``). Returns whether
    the relation was checked: False when the contiguous call raised anything else (other
    checks' business)."""
    __tracebackhide__ = True
    if expected.error is not None:
        if not isinstance(expected.error, errors):
            return False
        wanted = f"{type(expected.error).__name__} as its contiguous copy does ({expected.error})"
        if actual.error is None:
            raise layout_failure(f"returned {summary(actual.value)}, but should raise {wanted}", call)
        if type(actual.error) is not type(expected.error):
            raise layout_failure(
                f"raised {type(actual.error).__name__}({actual.error}), but should raise {wanted}", call
            ) from actual.error
        return True
    if actual.error is not None:
        raise layout_failure(
            f"raised {type(actual.error).__name__}({actual.error}), but should return what its contiguous copy returns",
            call,
        ) from actual.error
    assert_same_output(actual.value, expected.value, call=call, names=names)
    return True


def assert_unmodified(before: Mapping[str, dict], after: Mapping[str, dict], *, call: str) -> None:
    """The non-contiguous inputs (``before["laid"]``, ``input_state``) are as they were, unless
    the contiguous ones changed too (then modifying inputs is the no-mutation clauses' business)."""
    __tracebackhide__ = True
    changes = state_changes(before["laid"], after["laid"])
    if changes and not state_changes(before["contiguous"], after["contiguous"]):
        raise layout_failure(
            "modified its non-contiguous input, which it leaves untouched in its contiguous copy"
            + listed_changes(changes)
            + "\n",
            call,
        )


def snapshot(contiguous: Mapping[str, Any], laid: Mapping[str, Any]) -> dict[str, dict]:
    return {"contiguous": input_state(dict(contiguous), "input"), "laid": input_state(dict(laid), "input")}


def compare(
    function: Callable,
    contiguous_args: tuple,
    laid_args: tuple,
    contiguous: Mapping[str, Any],
    laid: Mapping[str, Any],
    *,
    call: str,
    errors: tuple[type[BaseException], ...] = (),
    names: Sequence[str] | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> None:
    """``function(*laid_args)`` behaves as ``function(*contiguous_args)`` and leaves the laid-out
    tensors (``laid``, the inputs by name) unchanged [tb-layout]."""
    __tracebackhide__ = True
    kwargs = dict(kwargs or {})
    before = snapshot(contiguous, laid)
    expected = run(function, *contiguous_args, **kwargs)
    actual = run(function, *laid_args, **kwargs)
    assert_same_behaviour(expected, actual, call=call, errors=errors, names=names)
    assert_unmodified(before, snapshot(contiguous, laid), call=call)


def tensor_function(backend, name: str) -> Callable:
    """The backend's tensor function ``name``: the backend's own with ``--device`` (the suite's
    device wrapper copies inputs, losing their layout), else what the fixture gives."""
    return getattr(backend.impl, name) if backend.device != "cpu" else getattr(backend, name)
