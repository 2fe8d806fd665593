"""The ``batchspec`` command's per-test timeout under Triton's interpreter (batchspec/cli.py,
issue 33): the 900 s of batchspec/pytest.ini is calibrated for eager torch; with
``TRITON_INTERPRET=1`` and no timeout of the run's own, the command passes
``--timeout=INTERPRETER_TIMEOUT_S``."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchspec import cli

ROOT = Path("/nonexistent-suite-root")


def test_the_interpreter_gets_the_longer_per_test_timeout(monkeypatch, capsys):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    args = cli._arguments(["--backend=triton", "--release"], ROOT)
    assert args[-1] == f"--timeout={cli.INTERPRETER_TIMEOUT_S}"
    assert cli.INTERPRETER_TIMEOUT_S > 900
    assert "per-test timeout 3600 s" in capsys.readouterr().err
    # -p no:xdist (the tests in this process) keeps it too
    assert cli._arguments(["--backend=triton", "-p", "no:xdist"], ROOT)[-1] == "--timeout=3600"


@pytest.mark.parametrize("chosen", [["--timeout=120"], ["--timeout", "120"], ["-o", "timeout=120"]])
def test_a_timeout_the_run_chooses_is_kept(monkeypatch, chosen):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    args = cli._arguments(["--backend=triton", *chosen], ROOT)
    assert not any(a.startswith("--timeout=3600") for a in args)


def test_without_the_interpreter_the_ini_timeout_stands(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    args = cli._arguments(["--backend=reference"], ROOT)
    assert not any(a.startswith("--timeout") for a in args)
