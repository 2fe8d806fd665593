"""The committed clause index (docs/clauses.md) is current: ``python -m
batchspec.conformance.tools.clause_index --check`` collects the whole suite to read the tests' marks
(the slow part of ``tests/unit/test_clause_index.py``).
"""

from __future__ import annotations

import subprocess
import sys

from _suite import ROOT


def test_the_committed_clause_index_is_current():
    done = subprocess.run(
        [sys.executable, "-m", "batchspec.conformance.tools.clause_index", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
