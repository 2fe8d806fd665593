"""The suite's state tests and golden state cases against
``tests/probe_backends/canonical_fingerprint_backend.py`` (the run of
``tests/unit/test_fingerprint_portability.py``).
"""

from __future__ import annotations

import os

from _suite import ROOT, run_conformance

BACKEND_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "probe_backends"), str(ROOT)]))


def test_state_tests_and_goldens_pass_with_the_independent_fingerprint(tmp_path):
    """The suite's state tests and golden state cases (fingerprints pinned byte for byte) pass
    against the backend with the independent fingerprint."""
    run = run_conformance(
        tmp_path,
        "conformance/test_checkpoint_resume.py",
        "conformance/test_checkpoint_validation.py",
        "conformance/test_checkpoint_fingerprint.py",
        "conformance/test_goldens.py",
        "-k",
        "state or test_checkpoint",
        "--backend=canonical_fingerprint_backend",
        env=BACKEND_ENV,
    )
    assert run.returncode == 0, run.output[-5000:]
    assert "backend=canonical_fingerprint_backend version=canonical-fingerprint-0" in run.output
    assert len(run.testcases) >= 60, len(run.testcases)
