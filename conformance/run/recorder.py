"""The ``Recorder`` plugin (registered by conformance/run/plugin.py): it collects every test's record
(conformance/run/result_records.py) where pytest reports results, logs each to ``results.jsonl`` as it
arrives, and at the end computes the verdict, writes the report (conformance/run/report.py) and
sets the exit status.

The report is written on every outcome once ``--conformance-report`` is known: a pass, a
failure, a usage error after configuration, and an interrupted run (Ctrl-C, or SIGTERM, which
the controller turns into Ctrl-C's path: verdict ``incomplete`` with the results so far).
Under pytest-xdist the controller records, and on Ctrl-C or SIGTERM it stops the workers at
once (SIGINT, then a kill after ``WORKER_GRACE_S``).
"""

from __future__ import annotations

import _thread
import json
import signal
import sys
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any, Protocol, cast

import pytest

from batchspec.conformance.helpers.asserts import skip_reason
from batchspec.conformance.multirank.launchers import plain_nodeid
from batchspec.conformance.run.backends import Backend
from batchspec.conformance.run.failure_blame import EVERY_CITED_CLAUSE, SUITE_ERROR
from batchspec.conformance.run.report import REPORT_JSON, REPORT_MD, RESULTS_LOG, is_worker, run_report, write_report
from batchspec.conformance.run.result_records import reproduce_command
from batchspec.conformance.run.stash import BACKEND

__all__ = ["CTRL_C", "WORKER_GRACE_S", "Recorder", "Terminated"]

# after Ctrl-C or SIGTERM, how long pytest-xdist's workers get to stop before they are killed
WORKER_GRACE_S = 1.0
# why the run stopped, in the report, on a KeyboardInterrupt that names nothing else
CTRL_C = "KeyboardInterrupt: Ctrl-C or SIGINT"


def _collection_message(report: pytest.CollectReport) -> str:
    """The gist of a collection error: its last ``E`` line (the exception), at most 500 characters."""
    text = str(report.longrepr)
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return (errors[-1] if errors else text.strip().splitlines()[-1] if text.strip() else "collection failed")[:500]


class _WorkerConfig(Protocol):
    workeroutput: dict[str, Any]


def _worker_output(config: pytest.Config) -> dict[str, Any]:
    """A pytest-xdist worker's ``config.workeroutput``: what it hands its controller at the end
    (``pytest_testnodedown``'s ``node.workeroutput``). xdist sets the attribute; pytest does not declare it."""
    return cast(_WorkerConfig, config).workeroutput


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the controller's main thread: the run stops as on Ctrl-C, and its
    report says ``incomplete``."""


class Recorder:
    """Collects the records where pytest reports results (in pytest-xdist's controller when the
    run is distributed), logs each to ``results.jsonl`` as it arrives, then computes the
    verdict, writes the report and sets the exit status: on a pass, a failure, an interruption
    (Ctrl-C, SIGTERM, ``-x``), a usage error after configuration, no test selected, or an
    internal error."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: dict[str, dict] = {}
        self.cited: dict[str, list[str]] = {}
        self.collection_errors: dict[str, str] = {}  # nodeid -> what could not be collected
        self.left_out: set[str] = set()  # deselected test ids (-k, -m, --deselect), from every process
        self.report: dict | None = None
        self.stopped: str | None = None  # why the run stopped early (Ctrl-C, SIGTERM, pytest-xdist's -x)
        self.error: str | None = None  # a usage or internal error after configuration
        self.controller = not is_worker(config)
        directory = config.getoption("--conformance-report")
        self.directory = Path(directory) if directory and self.controller else None
        # one JSON record per line, flushed: what a killed run leaves (the last line of a test id is its result)
        self._log = (self.directory / RESULTS_LOG).open("w", encoding="utf-8") if self.directory else None
        # SIGTERM (a CI job cancelled, a timeout) takes Ctrl-C's path in the controller: the report
        # is written, verdict incomplete. signal.signal works in the main thread only.
        # the whole run's bound (--run-timeout): past it the run takes Ctrl-C's path, verdict incomplete
        self.deadline: str | None = None
        self._deadline_timer = None
        seconds = config.getoption("--run-timeout", None)
        if self.controller and seconds and threading.current_thread() is threading.main_thread():
            self._deadline_timer = threading.Timer(seconds, self._on_deadline, args=(seconds,))
            self._deadline_timer.daemon = True
            self._deadline_timer.start()
        self._sigterm = None
        if self.controller and threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, self._on_sigterm)
            self._sigterm = signal.SIG_DFL if previous is None else previous

    def _on_sigterm(self, signum: int, frame) -> None:
        signal.signal(signal.SIGTERM, self._sigterm)  # a second SIGTERM is not caught
        raise Terminated(signal.Signals(signum).name)

    def _on_deadline(self, seconds: float) -> None:
        """A KeyboardInterrupt in the main thread, Ctrl-C's path. ``interrupt_main`` does nothing
        for a signal Python does not handle, and a job a shell without job control starts in the
        background (``batchspec ... &`` in a CI script) inherits SIGINT ignored: the controller's
        own SIGTERM handler, always there with the timer, stands in for Ctrl-C then."""
        self.deadline = f"the run timeout of {seconds:g} s (--run-timeout) was reached"
        handled = callable(signal.getsignal(signal.SIGINT))
        _thread.interrupt_main(signal.SIGINT if handled else signal.SIGTERM)

    def pytest_unconfigure(self) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        if self._log is not None:
            self._log.close()
        if self._sigterm is not None and signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            signal.signal(signal.SIGTERM, self._sigterm)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module skipped as a whole (the model checks without transformers) is recorded as one
        skipped entry, with its reason and fix, so the report says what did not run."""
        if is_worker(self.config):
            return
        if report.failed:  # a tampered golden, a module that fails to import: never dropped (xdist)
            self.collection_errors[plain_nodeid(report.nodeid)] = _collection_message(report)
            return
        if not report.skipped:
            return
        message = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason, fix = skip_reason(message.removeprefix("Skipped: "))
        nodeid = plain_nodeid(report.nodeid)
        record: dict[str, Any] = {
            "nodeid": nodeid,
            "cited": [],
            "outcome": "skipped",
            "blamed": [],
            "expectation": None,
        }
        self._keep({**record, "reason": reason, "fix": fix, "reproduce": ""})

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Tests the run's selection left out; a pytest-xdist worker hands them to its controller
        (``pytest_testnodedown``)."""
        self.left_out.update(plain_nodeid(item.nodeid) for item in items)
        if is_worker(self.config):
            _worker_output(self.config)["batchspec_left_out"] = sorted(self.left_out)

    @pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent under -p no:xdist
    def pytest_testnodedown(self, node, error) -> None:
        """What a pytest-xdist worker found at collection: the tests its selection left out, and a
        usage error (a test id that does not exist), which is the run's."""
        output = getattr(node, "workeroutput", {})
        self.left_out.update(output.get("batchspec_left_out", ()))
        if output.get("batchspec_usage_error") and self.error is None:
            self.error = output["batchspec_usage_error"]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup" and hasattr(report, "batchspec_cited"):
            self.cited[plain_nodeid(report.nodeid)] = report.batchspec_cited
        if getattr(report, "batchspec_global_state", None) is not None:
            self._keep(report.batchspec_global_state)  # the backend changed torch's settings (result_records.py)
        record = getattr(report, "batchspec_record", None)
        if record is None and report.failed and report.when not in ("setup", "call", "teardown"):
            record = self._crash_record(report)  # pytest-xdist: the worker died running the test
        if record is None:
            return
        previous = self.records.get(record["nodeid"])
        if previous is not None and previous["outcome"] not in ("passed", "unexpected pass"):
            return  # a teardown error after a failure: the failure is what the test showed
        self._keep(record)

    def _keep(self, record: dict) -> None:
        """Record a decided test, and append it to results.jsonl at once."""
        self.records[record["nodeid"]] = record
        if self._log is not None:
            self._log.write(json.dumps(record) + "\n")
            self._log.flush()

    def _crash_record(self, report: pytest.TestReport) -> dict:
        """A test whose process died (a crash, or a timeout that killed it): a failure of every
        clause it cites."""
        nodeid = plain_nodeid(report.nodeid)
        cited = self.cited.get(nodeid, [])
        try:
            timeout = self.config.getoption("timeout", None) or self.config.getini("timeout")
            limit = f" (or a hang past the per-test timeout of {timeout} s)" if timeout else ""
        except ValueError:  # pytest-timeout is not loaded
            limit = ""
        return {
            "nodeid": nodeid,
            "cited": cited,
            "outcome": "failed" if cited else "suite error",
            "blamed": cited,
            "blame": [EVERY_CITED_CLAUSE if cited else SUITE_ERROR],
            "expectation": None,
            "message": f"the test's process died: a crash{limit}: {str(report.longrepr)[:3000]}",
            "reproduce": reproduce_command(nodeid, self.config),
            "hypothesis": None,
        }

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session):
        try:
            return (yield)
        except pytest.UsageError as error:  # a test id that does not exist, a test citing no clause
            self.error = str(error)
            if is_worker(self.config):  # its controller collects nothing: it learns of the error here
                _worker_output(self.config)["batchspec_usage_error"] = self.error
            raise

    def pytest_internalerror(self, excrepr, excinfo: pytest.ExceptionInfo) -> None:
        if self.error is None:
            self.error = f"internal error: {excinfo.typename}: {excinfo.value}"

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo) -> None:
        value = excinfo.value
        if self.deadline is not None:
            self.stopped = self.deadline
        elif isinstance(value, pytest.exit.Exception):
            self.stopped = f"pytest.exit: {value.msg}"
        else:  # SIGTERM, pytest-xdist's stop (-x, a worker's Ctrl-C) and collection errors name themselves
            self.stopped = str(value) or CTRL_C
        if self.controller:
            self._stop_workers()

    def _stop_workers(self) -> None:
        """pytest-xdist's workers, stopped now rather than after their current tests: each gets
        SIGINT (as on Ctrl-C in a terminal; a test's own clean-up runs), and those still there
        after ``WORKER_GRACE_S`` are killed. Nothing when the run is not distributed, or its
        workers are done."""
        dsession = self.config.pluginmanager.getplugin("dsession")
        nodemanager = getattr(dsession, "nodemanager", None)
        if nodemanager is None or getattr(dsession, "session_finished", False):
            return
        try:
            for gateway in list(nodemanager.group):
                process = getattr(getattr(gateway, "_io", None), "popen", None)  # a popen gateway's worker
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGINT)
            nodemanager.group.terminate(WORKER_GRACE_S)
        except KeyboardInterrupt:  # a second Ctrl-C: the workers are killed at once
            nodemanager.group.terminate(0)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.controller:
            return  # a pytest-xdist worker: its controller reports
        if self._log is not None:
            self._log.close()
        status = session.exitstatus
        if status == pytest.ExitCode.NO_TESTS_COLLECTED and self.error is not None:
            status = pytest.ExitCode.USAGE_ERROR  # a worker's usage error (pytest-xdist): the run's, exit status 4
            print(f"ERROR: {self.error}", file=sys.stderr, flush=True)
        error = None
        if status == pytest.ExitCode.USAGE_ERROR:
            error = self.error or "a usage error (the run's output says which)"
        elif status == pytest.ExitCode.INTERNAL_ERROR:
            error = self.error or "an internal error (the run's output has the traceback)"
        elif status == pytest.ExitCode.NO_TESTS_COLLECTED and self.stopped is None:
            error = "no test was selected (the test ids, -k or -m select none)"
        elif self.config.getoption("collectonly"):
            return  # --collect-only: not a run
        stopped = session.shouldstop or session.shouldfail or self.stopped
        if not stopped and status == pytest.ExitCode.INTERRUPTED:
            stopped = "interrupted"
        self.report = run_report(
            self.config,
            list(self.records.values()),
            interrupted=str(stopped) if stopped else None,
            error=error,
            error_status=status,
            collection_errors=[{"nodeid": n, "message": m} for n, m in sorted(self.collection_errors.items())],
            left_out=sorted(self.left_out),
            limited_to=self._limited_to(),
            never_ran=self._never_ran(session) if stopped else [],
        )
        if self.directory is not None:
            write_report(self.directory, self.report)
        session.exitstatus = self.report["verdict"]["exit_status"]

    def _limited_to(self) -> list[str]:
        """The run's test paths and ids (relative to the suite's root) when they are not the whole
        suite (``conformance/``), else none."""
        suite = Path(__file__).resolve().parents[1]
        given = [(a, Path(a.split("::", 1)[0]).resolve()) for a in self.config.args]
        if not given or all(path == suite for _, path in given):
            return []
        return sorted(
            a
            if not path.is_relative_to(suite.parent)
            else a.replace(str(path), path.relative_to(suite.parent).as_posix(), 1)
            for a, path in given
        )

    def _never_ran(self, session: pytest.Session) -> list[str]:
        """The collected tests without a result: those of pytest-xdist's workers when the run is
        distributed (its controller collects none), else this session's."""
        sched = getattr(self.config.pluginmanager.getplugin("dsession"), "sched", None)
        collections = getattr(sched, "registered_collections", None) or getattr(sched, "node2collection", None) or {}
        collected = {n for ids in collections.values() for n in ids} or {item.nodeid for item in session.items}
        return sorted({plain_nodeid(n) for n in collected} - set(self.records))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.report is None:
            return
        backend: Backend = self.config.stash[BACKEND]
        verdict = self.report["verdict"]
        terminalreporter.section(f"batchspec clauses: backend {backend.name} {backend.version}")
        for clause, row in self.report["clauses"].items():
            counts: defaultdict[str, int] = defaultdict(int)
            for test in row["tests"]:
                counts[test["outcome"]] += 1
            detail = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            terminalreporter.write_line(f"{row['status']:>16}  {row['level']:<6} {clause:<32} ({detail})")
        for level in ("MUST", "SHOULD") if verdict["result"] != "error" else ():  # no test ran: all of them
            if self.report[f"untested_{level.lower()}_clauses"]:
                terminalreporter.write_line(
                    f"{level} clauses with no test in this run: "
                    f"{', '.join(self.report[f'untested_{level.lower()}_clauses'])}"
                )
        notes = [
            ("; ".join(verdict["errors"]), verdict["errors"]),
            ("; ".join(verdict["incomplete"]), verdict["incomplete"]),
            (f"{len(verdict['must_failures'])} MUST clause(s) fail", verdict["must_failures"]),
            (f"{len(verdict['suite_errors'])} suite error(s)", verdict["suite_errors"]),
            (f"{len(verdict['should_failures'])} SHOULD clause(s) fail (warnings)", verdict["should_failures"]),
            (f"{len(verdict['expected_failures'])} expected failure(s)", verdict["expected_failures"]),
            (f"{len(verdict['unexpected_passes'])} unexpected pass(es)", verdict["unexpected_passes"]),
            (f"{len(verdict['stale_expectations'])} stale expectation(s)", verdict["stale_expectations"]),
        ]
        shown = "; ".join(text for text, items in notes if items)
        left_out = verdict["left_out"]["count"]
        if left_out or verdict["limited_to"]:
            terminalreporter.write_line(
                f"selection: {left_out} test(s) left out by -k, -m or --deselect"
                + (f"; limited to {', '.join(verdict['limited_to'])}" if verdict["limited_to"] else "")
            )
        for group in verdict.get("skips", ()):
            fix = f"; fix: {group['fix']}" if group.get("fix") else ""
            terminalreporter.write_line(f"{group['count']} {group['outcome']}: {group['reason']}{fix}")
        terminalreporter.write_line(
            f"batchspec verdict: {verdict['result'].upper()} (exit status {verdict['exit_status']})"
            + (f": {shown}" if shown else "")
        )
        if self.directory is not None:
            terminalreporter.write_line(
                f"conformance report written to {self.directory / REPORT_JSON} and {REPORT_MD} "
                f"(results as they arrived: {RESULTS_LOG})"
            )
