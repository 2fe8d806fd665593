"""Running the conformance suite (or another long command) in a subprocess, reading what it
produced, and the session's long runs: started in the background at collection, read last."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SuiteRun:
    """What one ``pytest conformance`` subprocess produced."""

    returncode: int
    output: str
    testcases: list[ET.Element]
    report: dict  # the run's report.json (--conformance-report), {} when none was written
    folder: Path | None = None  # a background run's folder (files its processes wrote there)


def _command(tmp_dir: Path, args: tuple[str, ...]) -> tuple[list[str], Path, Path]:
    """The pytest command line; a conformance run (not ``pytest bench``) also writes the
    conformance report."""
    junit = tmp_dir / "junit.xml"
    report = tmp_dir / "report"
    command = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", f"--junitxml={junit}"]
    if (not args or args[0] != "bench") and not any(a.startswith("--conformance-report") for a in args):
        command.append(f"--conformance-report={report}")
    return command, junit, report / "report.json"


def _result(returncode: int, output: str, junit: Path, report: Path) -> SuiteRun:
    testcases = list(ET.parse(junit).getroot().iter("testcase")) if junit.exists() else []
    written = json.loads(report.read_text()) if report.exists() else {}
    return SuiteRun(returncode, output, testcases, written)


def run_conformance(tmp_dir: Path, *args: str, env: dict | None = None) -> SuiteRun:
    """Run ``pytest conformance ARGS`` in a subprocess with a JUnit XML and the conformance report."""
    command, junit, report = _command(tmp_dir, args)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    return _result(done.returncode, done.stdout + done.stderr, junit, report)


@dataclass(frozen=True)
class Finished:
    """What a background command produced: its exit status, its output (stdout and stderr
    interleaved) and the folder it was given for its files."""

    returncode: int
    output: str
    folder: Path


class BackgroundCommand:
    """A command started now, in a background process, with its output written to
    ``folder/output.txt``; ``result()`` waits for it."""

    def __init__(self, folder: Path, command: list[str], env: dict | None = None) -> None:
        self.folder = folder
        self._log = (folder / "output.txt").open("w+")
        # one torch thread each unless told otherwise: several long runs share the cores, and
        # torch's default (a thread per core in every process) costs half again in CPU time
        env = {"OMP_NUM_THREADS": "1", **(os.environ if env is None else env)}
        self._process = subprocess.Popen(
            command, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, text=True, env=env
        )
        self._finished: Finished | None = None

    @property
    def pid(self) -> int:
        """The command's process id (pytest-xdist's controller when a suite run is distributed)."""
        return self._process.pid

    @property
    def running(self) -> bool:
        """Whether the command's process is still going."""
        return self._process.poll() is None

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the command's process (not to its children)."""
        self._process.send_signal(signum)

    def finished(self, timeout: float = 900) -> Finished:
        """Wait for the command (at most ``timeout`` seconds, 15 minutes by default).

        Raises:
            subprocess.TimeoutExpired: it is still going after ``timeout`` seconds.
        """
        if self._finished is None:
            returncode = self._process.wait(timeout=timeout)
            self._log.seek(0)
            self._finished = Finished(returncode, self._log.read(), self.folder)
            self._log.close()
        return self._finished

    def result(self, timeout: float = 900):
        """What the command produced (``finished``; a suite run reads its files too)."""
        return self.finished(timeout)

    def stop(self) -> None:
        """Kill the command if it is still going (the session ended without needing it)."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


class BackgroundRun(BackgroundCommand):
    """``run_conformance`` started now, in a background process, and read when needed."""

    def __init__(self, tmp_dir: Path, *args: str, env: dict | None = None) -> None:
        command, self._junit, self._report = _command(tmp_dir, args)
        super().__init__(tmp_dir, command, env=env)

    def result(self, timeout: float = 900) -> SuiteRun:
        """Wait for the run (at most ``timeout`` seconds) and return what it produced.

        Raises:
            subprocess.TimeoutExpired: the run is still going after ``timeout`` seconds.
        """
        done = self.finished(timeout)
        return dataclasses.replace(_result(done.returncode, done.output, self._junit, self._report), folder=self.folder)


# ----------------------------------------------------------------- long runs of a session ----
# The project's tests start their long runs (whole-suite runs, the mutant sample, the bench smoke
# run) all at once, as soon as collection shows a test that needs one, so that both cores stay
# busy while the other tests run; a test waits for its run only when it reads it.

_STARTERS: dict[str, Callable[[Path], BackgroundCommand]] = {}
_STARTED: dict[str, BackgroundCommand] = {}


def long_run(name: str, start: Callable[[Path], BackgroundCommand]):
    """A session-scoped fixture named ``name`` whose value is ``start(folder).result()``:
    ``start`` is called with a new temporary folder when collection ends (``start_long_runs``),
    or when a test first asks for it. Assign it to a module variable of the same name."""
    _STARTERS[name] = start

    @pytest.fixture(scope="session", name=name)
    def _fixture(tmp_path_factory):
        if name not in _STARTED:  # e.g. requested by a test selected after collection
            _STARTED[name] = start(tmp_path_factory.mktemp(name))
        return _STARTED[name].result()

    return _fixture


def long_runs_last(items: list[pytest.Item]) -> None:
    """Move the tests that read a long run after the others, in place and otherwise in order
    (``pytest_collection_modifyitems``): the others run while the long runs do."""
    items.sort(key=lambda item: any(name in _STARTERS for name in getattr(item, "fixturenames", ())))


def start_long_runs(session: pytest.Session) -> None:
    """Start the long runs the collected tests need (``pytest_collection_finish``)."""
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ()) if name in _STARTERS}
    for name in sorted(needed - set(_STARTED)):
        _STARTED[name] = _STARTERS[name](session.config._tmp_path_factory.mktemp(name))


def stop_long_runs() -> None:
    """Kill the long runs still going (``pytest_sessionfinish``)."""
    for run in _STARTED.values():
        run.stop()
