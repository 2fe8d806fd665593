"""The command-line options every batchspec pytest entry point shares: ``--backend`` and
``--device``, defined once here. ``pytest conformance`` takes one backend; a benchmark run
(``bench/``) takes ``--backend`` repeatedly to put backends side by side.
"""

from __future__ import annotations

import pytest

from batchspec.conformance.run.backends import BUILTIN_BACKENDS, ENTRY_POINT_GROUP
from batchspec.conformance.run.functions import placed_functions

__all__ = ["add_backend_option", "add_device_option"]


def add_backend_option(group: pytest.OptionGroup, *, repeatable: bool = False) -> None:
    """``--backend NAME``: a built-in name, a name registered in the ``batchspec.backends``
    entry-point group, or a ``module`` / ``module:attribute`` path. The option always collects
    a list (``--backend=reference --backend=vectorized``); without ``repeatable`` the caller
    refuses more than one (a silently ignored ``--backend`` could let a CI typo pass)."""
    group.addoption(
        "--backend",
        action="append",  # one backend only (checked by the caller) unless repeatable
        default=None,
        help=f"backend under test (required{', repeatable' if repeatable else ''}): a built-in name "
        f"({', '.join(sorted(BUILTIN_BACKENDS))}), a name registered in the {ENTRY_POINT_GROUP!r} entry-point "
        "group, or a module / module:attribute path",
    )


def _listed(names: tuple[str, ...]) -> str:
    """``("a", "b", "c")`` -> ``"a, b and c"``."""
    return " and ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def add_device_option(group: pytest.OptionGroup) -> None:
    """``--device``: ``cpu`` (default), ``cuda`` or ``cuda:N``; checked by
    ``batchspec.conformance.run.device.check_device_option`` at configure time."""
    group.addoption(
        "--device",
        default="cpu",
        help="where the tensor functions run: cpu (default), cuda or cuda:N. Off the CPU, the inputs of "
        f"{_listed(placed_functions())} are moved there, [tb-device] is checked on their outputs, and the results "
        "are compared on the CPU (conformance/run/device.py). The other contract functions are called as they are "
        "(the token fields of Datum, the collaters and ZephonDataLoader are CPU by contract); the multi-rank "
        "scenarios always run on the CPU",
    )
