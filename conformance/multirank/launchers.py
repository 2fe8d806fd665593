"""The launchers of the multi-rank scenarios (``--launcher``) and the pytest-xdist group that
keeps each launcher's scenarios in one worker (conformance/test_checkpoint_ranks.py)."""

from __future__ import annotations

import pytest

__all__ = ["LAUNCHERS", "XDIST_GROUP_PREFIX", "parse_launchers", "plain_nodeid"]

LAUNCHERS = ("mpiexec", "torch")


def parse_launchers(value: str) -> list[str]:
    """``--launcher``'s comma-separated names, validated.

    Raises:
        pytest.UsageError: an empty or unknown name.
    """
    names = [name.strip() for name in value.split(",")]
    if any(not name for name in names):
        raise pytest.UsageError(f"--launcher={value!r}: empty launcher name; choose from {list(LAUNCHERS)}")
    unknown = sorted(set(names) - set(LAUNCHERS))
    if unknown:
        raise pytest.UsageError(f"--launcher={value!r}: unknown launcher(s) {unknown}; choose from {list(LAUNCHERS)}")
    return names


# pytest-xdist's --dist=loadgroup appends "@<group>" to the node ids of grouped tests; the
# multi-rank tests are grouped per launcher (conformance/test_checkpoint_ranks.py), so that one
# worker runs each launcher's scenarios and their module fixtures run once
XDIST_GROUP_PREFIX = "multirank-"


def plain_nodeid(nodeid: str) -> str:
    """``nodeid`` without pytest-xdist's ``@<group>`` suffix: the id pytest selects the test by."""
    return nodeid.rsplit(f"@{XDIST_GROUP_PREFIX}", 1)[0]
