"""CI (``.ci/run``) runs exactly README's second command, the one README gives for the project's own
checks (``nox -s ci``).
"""

from __future__ import annotations

import re

from _suite import ROOT


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```(?:bash|sh)\n(.+?)\n```", readme, flags=re.S)
    assert len(commands) >= 2, "README must open with the main-job command and the test command"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1].strip() in ci, f"README's test command {commands[1]!r} is not what .ci/run runs"
    # nox's ci session (noxfile.py) is lint, types and every tier of tests/
    assert commands[1].strip().endswith(".venv/bin/nox -s ci"), commands[1]
