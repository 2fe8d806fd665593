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
    clause_report: dict


def run_conformance(tmp_dir: Path, *args: str, env: dict | None = None) -> SuiteRun:
    """Run ``pytest conformance ARGS`` in a subprocess with a JUnit XML and a clause report."""
    junit = tmp_dir / "junit.xml"
    report = tmp_dir / "clauses.json"
    command = [
        sys.executable,
        "-m",
        "pytest",
        *args,
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        f"--clause-report={report}",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    testcases = list(ET.parse(junit).getroot().iter("testcase")) if junit.exists() else []
    clause_report = json.loads(report.read_text()) if report.exists() else {}
    return SuiteRun(done.returncode, done.stdout + done.stderr, testcases, clause_report)
