"""The order the suite runs its tests in: cheap checks first, so that ``-x`` stops on, and a
report's first failure is, the cheapest reproduction of a bug.

Tiers, by where a test lives under the suite's folder (``TIERS``): the golden cases
(``test_goldens.py``: stored inputs, one call each), then the other section modules
(``test_<section>.py``: fixed inputs, some hypothesis), then the hypothesis properties
(``properties/``), then the model-level equivalence checks (``model/``: a model's forward and
backward pass per batch, the slowest tests by far). Inside a tier, and for anything outside
the suite's folder, pytest's collection order is kept (a stable sort): the multi-rank
scenarios of ``test_checkpoint_ranks.py`` keep their place and their ``xdist_group`` marks,
so ``--dist=loadgroup`` still runs each launcher's scenarios in one worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TypeVar

__all__ = ["TIERS", "cheap_checks_first", "tier"]

# the first path part under the suite's folder -> its tier (lower runs first); a section module
# not listed here is tier SECTIONS
GOLDENS, SECTIONS, PROPERTIES, MODEL = range(4)
TIERS: dict[str, int] = {"test_goldens.py": GOLDENS, "properties": PROPERTIES, "model": MODEL}


class _Located(Protocol):
    @property
    def path(self) -> Path: ...


def tier(path: Path, root: Path) -> int:
    """The tier of the test file ``path`` (``TIERS``); ``SECTIONS`` for a section module and for
    a file outside ``root``, the suite's folder."""
    try:
        first = path.relative_to(root).parts[0]
    except (ValueError, IndexError):
        return SECTIONS
    return TIERS.get(first, SECTIONS)


Item = TypeVar("Item", bound=_Located)


def cheap_checks_first(items: Sequence[Item], root: Path) -> list[Item]:
    """``items`` (pytest's collected tests) by tier, collection order kept inside each tier."""
    root = root.resolve()
    tiers: dict[Path, int] = {}  # one tier per test file
    for path in {item.path for item in items}:
        tiers[path] = tier(path.resolve(), root)
    return sorted(items, key=lambda item: tiers[item.path])
