"""The project's code passes ``ruff check`` and ``ruff format --check`` (configured in
pyproject.toml), so CI, which runs these tests, enforces both."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from _suite import ROOT

RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    assert RUFF, "ruff is not installed: pip install -e '.[test]'"
    return subprocess.run([RUFF, *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_check_passes():
    done = _ruff("check", ".")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_ruff_format_check_passes():
    done = _ruff("format", "--check", ".")
    assert done.returncode == 0, "run `ruff format .`:\n" + done.stdout[-4000:] + done.stderr[-2000:]
