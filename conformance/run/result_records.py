"""A test's *record* (conformance/run/verdict.py): its outcome, the clauses it cites and is blamed
on and how (``blame``, conformance/run/failure_blame.py), its failure message and hypothesis blob, the reason and fix of a
skip, its expectation (conformance/run/expectations.py), and a command that reruns it."""

from __future__ import annotations

import os
import re
import shlex
import sys
import textwrap
from typing import Any

import pytest

from batchspec.conformance.helpers.asserts import skip_reason
from batchspec.conformance.multirank.launchers import plain_nodeid
from batchspec.conformance.run import torch_state
from batchspec.conformance.run.backends import Backend
from batchspec.conformance.run.expectations import match_failure, match_test
from batchspec.conformance.run.failure_blame import CLAUSE_CHECK, blame_failure
from batchspec.conformance.run.spec import spec_clauses
from batchspec.conformance.run.stash import BACKEND, BACKEND_SPEC, EXPECTATIONS, STATE_CHANGES

__all__ = ["GLOBAL_STATE_SUFFIX", "NOT_SUPPORTED", "global_state_record", "record_of", "reproduce_command"]

# the skip message of a test whose required capability the backend does not declare
NOT_SUPPORTED = "NOT SUPPORTED"
# a test's [global-state] record (``global_state_record``) is named after the test, with this suffix
GLOBAL_STATE_SUFFIX = f"::[{torch_state.CLAUSE}]"


def failure_message(report: pytest.TestReport) -> str:
    """The failure's own message: the ``E`` lines of pytest's report, without the test source
    it prints above them."""
    text = str(report.longrepr)
    message = textwrap.dedent("\n".join(line[1:] for line in text.splitlines() if line.startswith("E ")))
    return (message or text).strip()[:4000]


HYPOTHESIS_BLOB = re.compile(r"@reproduce_failure\([^)]*\)")


def reproduce_command(nodeid: str, config: pytest.Config) -> str:
    """A shell command that reruns one test: under the ``batchspec`` command, that command with
    the node id (it resolves ids in the installed suite) and the run's ``--device``,
    ``--release`` and ``--expectations``; else pytest, from its rootdir (pytest's node ids are
    relative to it)."""
    backend: Backend = config.stash[BACKEND]
    spec = config.stash[BACKEND_SPEC]
    assert spec is not None, "a loaded backend was named by --backend"
    options = [f"--backend={shlex.quote(spec)}"]
    if backend.device != "cpu":
        options.append(f"--device={shlex.quote(backend.device)}")
    if config.getoption("--batchspec-command"):
        options += ["--release"] if config.getoption("--release") else []
        expectations = config.getoption("--expectations")
        options += [f"--expectations={shlex.quote(expectations)}"] if expectations else []
        return f"batchspec {' '.join(options)} {shlex.quote(nodeid)}"
    path = os.environ.get("PYTHONPATH")
    prefix = f"PYTHONPATH={shlex.quote(path)} " if path else ""
    rootdir = shlex.quote(str(config.rootpath))
    return f"cd {rootdir} && {prefix}{sys.executable} -m pytest {shlex.quote(nodeid)} {' '.join(options)}"


def record_of(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport, cited: list[str]) -> dict:
    """The test's record (conformance/run/verdict.py) from the phase that decided it; an expected
    failure becomes pytest's xfail, an expected failure that passes its XPASS (a failure under
    ``--strict-expectations``)."""
    config = item.config
    expectations = config.stash[EXPECTATIONS]
    nodeid = plain_nodeid(item.nodeid)
    record: dict[str, Any] = {
        "nodeid": nodeid,
        "cited": cited,
        "outcome": report.outcome,
        "blamed": [],
        "expectation": None,
    }
    record["reproduce"] = reproduce_command(nodeid, config)
    if report.skipped:
        record["outcome"] = "not supported" if NOT_SUPPORTED in str(report.longrepr) else "skipped"
        message = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        record["reason"], record["fix"] = skip_reason(message.removeprefix("Skipped: "))
    elif report.failed:
        outcome, blamed, how = blame_failure(call.excinfo.value if call.excinfo else None, cited, spec_clauses())
        blob = HYPOTHESIS_BLOB.search(str(report.longrepr))
        record.update(outcome=outcome, blamed=blamed, blame=how, message=failure_message(report))
        record["hypothesis"] = blob.group(0) if blob else None
        entry = match_failure(expectations, nodeid, blamed) if outcome == "failed" else None
        if entry is not None:
            record.update(outcome="expected failure", expectation=entry.index)
            report.outcome = "skipped"
            report.wasxfail = f"expected failure ({entry.category}): {entry.reason}"
    elif report.when == "call" and (entry := match_test(expectations, nodeid)) is not None:
        record.update(outcome="unexpected pass", expectation=entry.index)
        if config.getoption("--strict-expectations"):
            report.outcome = "failed"
            report.longrepr = f"[XPASS(strict)] expected to fail ({entry.category}): {entry.reason}"
        else:
            report.wasxfail = f"expected failure ({entry.category}): {entry.reason}"
    return record


def global_state_record(item: pytest.Item) -> dict | None:
    """The [global-state] record of a test during whose call phase the backend changed torch's
    process-wide settings (``item.stash[STATE_CHANGES]``, conformance/run/torch_state.py), else
    None: a failure of that clause alone, named ``<test id>::[global-state]``, with the test's
    reproduce command. It stands beside the test's own record, so the clauses the test checks
    keep the outcome their checks gave (a SHOULD failure never makes them inconclusive)."""
    changes = item.stash.get(STATE_CHANGES, None)
    if not changes:
        return None
    config = item.config
    nodeid = plain_nodeid(item.nodeid)
    record: dict[str, Any] = {
        "nodeid": nodeid + GLOBAL_STATE_SUFFIX,
        "cited": [torch_state.CLAUSE],
        "outcome": "failed",
        "blamed": [torch_state.CLAUSE],
        "blame": [CLAUSE_CHECK],
        "expectation": None,
        "message": torch_state.failure_message(changes),
        "reproduce": reproduce_command(nodeid, config),
        "hypothesis": None,
    }
    expectations = config.stash[EXPECTATIONS]
    entry = match_failure(expectations, record["nodeid"], [torch_state.CLAUSE])
    if entry is not None:
        record.update(outcome="expected failure", expectation=entry.index)
    return record
