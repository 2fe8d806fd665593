"""The run's state, on pytest's typed store ``config.stash``: one ``pytest.StashKey`` per fact,
declared here and nowhere else.

``pytest_configure`` (conformance/run/plugin.py, ``_configure_run``) sets them, in this order,
before any test is collected; a key not set yet (a usage error came first, so the report is
written without it) is read with ``config.stash.get(KEY, default)``. Under pytest-xdist every
worker configures its own, from the same options.

- ``BACKEND_SPEC``: ``--backend``'s value as given (``reference``, ``module:attribute``), or
  None when it was not given; the reproduce commands and the rank processes load it again;
- ``BACKEND``: the loaded ``Backend`` (conformance/run/backends.py), with ``--device`` applied;
- ``SELECTED_LAUNCHERS``: ``--launcher``'s process launchers of the multi-rank scenarios
  (conformance/multirank/launchers.py);
- ``EXPECTATIONS``: the ``--expectations`` file's entries (conformance/run/expectations.py),
  empty without the option.

One key is a test's, on ``item.stash``: ``STATE_CHANGES``, the changes to torch's process-wide
settings the backend made during the test's call phase (set by ``pytest_runtest_call``,
conformance/run/plugin.py; read for the test's [global-state] record, conformance/run/result_records.py).
"""

from __future__ import annotations

import pytest

from batchspec.conformance.run.backends import Backend
from batchspec.conformance.run.expectations import Expectation

__all__ = ["BACKEND", "BACKEND_SPEC", "EXPECTATIONS", "SELECTED_LAUNCHERS", "STATE_CHANGES"]

BACKEND_SPEC = pytest.StashKey[str | None]()
BACKEND = pytest.StashKey[Backend]()
SELECTED_LAUNCHERS = pytest.StashKey[list[str]]()
EXPECTATIONS = pytest.StashKey[list[Expectation]]()
STATE_CHANGES = pytest.StashKey[list[str]]()
