"""Deterministic cost figures of a call: torch operator calls and bytes materialised.

Timings drift on a shared machine; these do not. ``OperatorCounter`` is a ``TorchDispatchMode``
that sees every aten operator a block dispatches (on any device) and adds up the bytes of the
tensors those operators create (views, and outputs that are one of the operator's inputs, as
in-place operators return, create nothing).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["OperatorCounter", "counted"]


class OperatorCounter(TorchDispatchMode):
    """Counts the aten operators a block dispatches and the bytes of the tensors they create.

    Attributes:
        calls: operator name (``aten.cumsum``) -> number of calls.
        bytes_materialised: total bytes of new tensors (``numel * element_size``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.bytes_materialised = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.calls[str(func.overloadpacket)] += 1
        if not func.is_view:
            inputs = {
                t.untyped_storage().data_ptr()
                for t in tree_leaves((args, kwargs))
                if isinstance(t, torch.Tensor) and t.device.type != "meta"
            }
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in inputs:
                    self.bytes_materialised += t.numel() * t.element_size()
        return out

    @property
    def operators(self) -> int:
        """The number of operator calls."""
        return sum(self.calls.values())


def counted(call: Callable[[], Any]) -> OperatorCounter:
    """Run ``call`` once under an ``OperatorCounter`` and return the counter."""
    with OperatorCounter() as counter:
        call()
    return counter
