"""The ``batchspec`` command: run the installed conformance suite against a backend, from any
directory (a backend's own repository, its CI).

    batchspec --backend=NAME [--device=cuda] [pytest options] [conformance/test_x.py::test ...]
    batchspec check-model --config <config.json | model dir> [--backend NAME] [...]
    batchspec --help | --version

``NAME`` is a built-in backend (``reference``, ``vectorized``), one registered in the
``batchspec.backends`` entry-point group, or an importable ``module`` / ``module:attribute``.
Every other option is pytest's or the suite's (``batchspec --help`` lists them, the suite's under
"batchspec"; ``--help`` and ``--version`` need no backend).
Test ids are relative to the installed package (``conformance/test_datum.py::test_x``), as the
suite prints them in its reproduce commands; with none, the whole suite runs.

The run uses ``batchspec/pytest.ini`` as its configuration (never the configuration of the
directory it starts in), keeps pytest's cache in ``./.pytest_cache``, and exits with the
verdict's status (conformance/run/verdict.py). Tests run in pytest-xdist workers (two where two
cores exist, else one, unless ``-n`` is given; ``-p no:xdist`` runs them in this process), so a
backend that crashes fails the test it crashed in (once: conformance/run/scheduling.py), and one
that hangs fails it after the per-test timeout (``--timeout``, default 900 s; 3600 s under Triton's
interpreter, ``INTERPRETER_TIMEOUT_S``); the run then goes
on, within the whole run's bound (``--run-timeout``). With ``-p no:xdist``, pytest-xdist's
options (``-n``, ``--dist``) are dropped, and the command says so.

``batchspec check-model`` runs the model-level equivalence check on a model configuration
instead (``conformance/model/cli.py``; ``batchspec check-model --help``).
"""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path

import pytest

from batchspec.conformance.run.package_data import on_disk

__all__ = ["main", "suite_root", "version_line"]


def suite_root() -> Path:
    """The directory that holds the suite's ``conformance/`` package (the installed
    ``batchspec`` package, or a checkout's root): the rootdir of runs the command starts."""
    return on_disk(resources.files("batchspec.conformance")).parent


# pytest options whose value is a separate argument that may look like a test id
_VALUE_OPTIONS = frozenset({"-k", "-m", "-p", "-o", "-c", "--deselect", "--ignore", "--ignore-glob", "--rootdir"})


# The per-test timeout under Triton's interpreter (TRITON_INTERPRET=1) when the run sets none: the
# 900 s of batchspec/pytest.ini is calibrated for eager torch, while the interpreter runs a kernel
# program by program in Python, minutes for the suite's inputs past one GPU block (issue 33)
INTERPRETER_TIMEOUT_S = 3600


def _interpreter_timeout(argv: list[str]) -> list[str]:
    """``[--timeout=INTERPRETER_TIMEOUT_S]`` when Triton's interpreter is on and ``argv`` sets no
    per-test timeout (``--timeout``, ``-o timeout=...``), else ``[]``; the command says so."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return []
    chosen = any(
        a == "--timeout" or a.startswith("--timeout=") or a.startswith(("timeout=", "-otimeout=")) for a in argv
    )
    if chosen:
        return []
    print(
        f"batchspec: Triton's interpreter is on (TRITON_INTERPRET=1): per-test timeout {INTERPRETER_TIMEOUT_S} s "
        "(the default 900 s is calibrated for eager torch; --timeout=N chooses)",
        file=sys.stderr,
        flush=True,
    )
    return [f"--timeout={INTERPRETER_TIMEOUT_S}"]


def _arguments(argv: list[str], root: Path) -> list[str]:
    """``argv`` with test ids (``conformance/...``, as the suite prints them) made absolute under
    ``root``, the whole suite when none is given, and ``default_workers()`` pytest-xdist workers
    with ``--dist=loadgroup`` unless ``argv`` chooses (``-n``, ``--numprocesses``, ``--dist``;
    ``-p no:xdist`` runs the tests in this process)."""
    out, tests = [], []
    for index, arg in enumerate(argv):
        path = arg.split("::", 1)[0]
        value = index > 0 and argv[index - 1] in _VALUE_OPTIONS
        if not value and path.startswith("conformance/") and (root / path).exists():
            tests.append(str(root / arg))
        else:
            out.append(arg)
    if any(a in ("no:xdist", "-pno:xdist") for a in argv):
        out, dropped = _without_xdist_options(out)
        if dropped:
            print(
                f"batchspec: -p no:xdist runs the tests in this process; ignoring {' '.join(dropped)}",
                file=sys.stderr,
                flush=True,
            )
        return [*(tests or [str(root / "conformance")]), *out, *_interpreter_timeout(argv)]
    workers = [] if any(a.startswith(("-n", "--numprocesses")) for a in argv) else ["-n", str(default_workers())]
    dist = [] if any(a.startswith(("--dist", "-d")) for a in argv) else ["--dist", "loadgroup"]
    return [*(tests or [str(root / "conformance")]), *workers, *dist, *out, *_interpreter_timeout(argv)]


# pytest-xdist's options, which pytest rejects once -p no:xdist took the plugin away
_XDIST_VALUE_OPTIONS = ("-n", "--numprocesses", "--dist", "--maxprocesses", "--max-worker-restart", "--tx")


def _without_xdist_options(args: list[str]) -> tuple[list[str], list[str]]:
    """``args`` without pytest-xdist's options (``-n 2``, ``-n2``, ``--dist=load``, ...), and
    those it dropped."""
    kept, dropped, index = [], [], 0
    while index < len(args):
        arg = args[index]
        name = arg.split("=", 1)[0]
        if arg in _XDIST_VALUE_OPTIONS and index + 1 < len(args):
            dropped += args[index : index + 2]
            index += 2
            continue
        if name in _XDIST_VALUE_OPTIONS or (arg.startswith("-n") and arg[2:].isalnum() and not arg.startswith("--")):
            dropped.append(arg)
        else:
            kept.append(arg)
        index += 1
    return kept, dropped


def default_workers() -> int:
    """pytest-xdist workers of a run that does not choose: 2 where this process may use 2 cores
    or more, else 1. Two, not one per core: the multi-rank scenarios start 4 rank processes per
    job, and ``--dist=loadgroup`` puts each launcher's scenarios in one worker
    (conformance/multirank/launchers.py)."""
    return 2 if len(os.sched_getaffinity(0)) >= 2 else 1


def version_line() -> str:
    """What ``batchspec --version`` prints first (pytest's version follows): the suite's version
    and the SPEC version it checks."""
    from batchspec.conformance.run.report import suite_version
    from batchspec.conformance.run.spec import spec_version

    return f"batchspec {suite_version()}: conformance suite for SPEC {spec_version()}"


def main(argv: list[str] | None = None) -> int:
    """Run the suite, or ``check-model``; returns the exit status: the verdict's, or pytest's
    (0 for ``--help`` and ``--version``, 4 for a usage error). A failing run raises nothing:
    pytest turns errors into exit statuses."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check-model"]:
        from batchspec.conformance.model.cli import main as check_model

        return check_model(argv[1:])
    if "--version" in argv or "-V" in argv:
        print(version_line(), flush=True)  # pytest's --version, which needs no backend, adds its own line
    root = suite_root()
    ini = on_disk(resources.files("batchspec") / "pytest.ini")
    args = [
        "-c",
        str(ini),
        f"--rootdir={root}",
        "-o",
        f"cache_dir={Path.cwd() / '.pytest_cache'}",
        "--batchspec-command",
        *_arguments(argv, root),
    ]
    return int(pytest.main(args))
