"""Running the conformance suite in a subprocess and reading what it produced."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SuiteRun:
    """What one ``pytest conformance`` subprocess produced."""

    returncode: int
    output: str
    testcases: list[ET.Element]
    report: dict  # the run's report.json (--conformance-report), {} when none was written


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


class BackgroundRun:
    """``run_conformance`` started now, in a background process, and read when needed: the
    project's tests start their long suite runs at session start so that they use the second
    core while the other tests run."""

    def __init__(self, tmp_dir: Path, *args: str, env: dict | None = None) -> None:
        command, self._junit, self._report = _command(tmp_dir, args)
        self._log = (tmp_dir / "output.txt").open("w+")
        self._process = subprocess.Popen(
            command, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, text=True, env=env
        )
        self._run: SuiteRun | None = None

    @property
    def pid(self) -> int:
        """The run's process id (pytest-xdist's controller when the run is distributed)."""
        return self._process.pid

    @property
    def running(self) -> bool:
        """Whether the run's process is still going."""
        return self._process.poll() is None

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the run's process (not to its workers)."""
        self._process.send_signal(signum)

    def result(self, timeout: float = 900) -> SuiteRun:
        """Wait for the run (at most ``timeout`` seconds, 15 minutes by default) and return what
        it produced.

        Raises:
            subprocess.TimeoutExpired: the run is still going after ``timeout`` seconds.
        """
        if self._run is None:
            returncode = self._process.wait(timeout=timeout)
            self._log.seek(0)
            self._run = _result(returncode, self._log.read(), self._junit, self._report)
            self._log.close()
        return self._run

    def stop(self) -> None:
        """Kill the run if it is still going (the session ended without needing it)."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
