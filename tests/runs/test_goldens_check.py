"""``batchspec.conformance.tools.goldens --check`` (the slow part of ``tests/unit/test_golden_verified_read.py``):
it passes on the committed tree and fails on a stale file or a SPEC example block that disagrees;
each check regenerates every stored case with the reference.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from batchspec.conformance.tools import goldens

REPO = Path(__file__).resolve().parents[2]


def test_check_passes_on_the_committed_tree():
    """`python -m batchspec.conformance.tools.goldens --check` regenerates byte-identical files and SPEC blocks."""
    result = subprocess.run(
        [sys.executable, "-m", "batchspec.conformance.tools.goldens", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_reports_a_stale_file(golden_copy, monkeypatch):
    """--check fails, listing the file, when a stored file is not what regeneration gives."""
    path = golden_copy / "data" / "test_example_a_defaults" / "record.json"
    path.write_bytes(path.read_bytes().replace(b"Example A", b"Example Z"))
    problems = goldens.check(golden_copy, spec_path=golden_copy / "no-spec.md")
    assert any("test_example_a_defaults/record.json" in p for p in problems), problems


def test_spec_blocks_that_disagree_with_the_goldens_fail(tmp_path):
    """SPEC.md's rendered example blocks must equal what the canon cases render."""
    spec = tmp_path / "SPEC.md"
    text = goldens.SPEC.read_text(encoding="utf-8")
    assert "<!-- golden:test_example_a_defaults -->" in text
    rendered = "int64 `[[12,13,21,22,31,32,-100,-100],"
    assert rendered in text
    spec.write_text(text.replace(rendered, "int64 `[[12,13,21,22,31,32,-100,-99],", 1), encoding="utf-8")
    problems = goldens.check(spec_path=spec)
    assert any("golden example blocks differ" in p for p in problems), problems
