"""Loads the conformance plugin (``conformance/run/plugin.py``) for runs from a checkout: pytest
finds a conftest's hooks and fixtures by name, so they are re-exported here."""

from batchspec.conformance.run.plugin import (  # noqa: F401
    backend,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_report_header,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_xdist_make_scheduler,
    scratch,
)
