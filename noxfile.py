"""The project's task runner: ``nox -s NAME`` (``nox -l`` lists the sessions).

Every session runs in the environment nox itself runs in (``python=False``: no virtualenv is
made and nothing is reinstalled, so torch's CPU build stays as README's setup installed it);
run it as ``.venv/bin/nox`` after that setup. The tests' tiers (CONTRIBUTING.md, "Running the
tests"):

- ``unit``: ``tests/unit/``, the harness libraries on literal inputs, seconds;
- ``runs``: ``tests/runs/``, whole-suite runs, the mutant sample, the wheel, the bench smoke;
- ``upstream``: ``tests/upstream/``, against upstream nemo-automodel 0.7.0 and Zephon.

``ci`` is what ``.ci/run`` runs: ``lint``, ``types``, then the three tiers.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "types", "unit"]

# the unit tier on 2 workers; the other tiers need none: their long runs (``_suite.long_run``) start
# in the background when collection ends and use both cores while the other tests run, and the
# tests that read them run last
UNIT = ("tests/unit", "-n", "2")


# the long tiers run several suite runs at once on the cores (tests/conftest.py); one torch thread
# per process, every subprocess included, keeps them from contending (measured on 2 cores, at
# 6b8d0f8 before the tests that read long runs ran last: the runs and upstream tiers took 13m54s
# wall and 20.5 CPU minutes with torch's default threads, 10m06s and 12.6 CPU minutes with one;
# with those tests last, 7m19s at 538e3b6)
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def _run(session: nox.Session, *args: str, env: dict[str, str] | None = None) -> None:
    """``python -m ARGS`` with the interpreter nox runs in (``.venv/bin/python``)."""
    session.run(sys.executable, "-m", *args, external=True, env=env)


def _mypy_tree() -> Path:
    """Lay out the package as the wheel installs it, out of links, under the environment nox runs
    in (``<venv>/batchspec-mypy/batchspec/``): batchspec/'s files, and each folder pyproject.toml's
    package-dir maps to ``batchspec.<folder>``, so that mypy resolves ``batchspec.reference`` and
    the rest from the tree (``MYPYPATH``). The tree and mypy's cache live in the environment, not in
    the checkout, so a search of the checkout (``grep -R`` included) never finds a module twice
    (CONTRIBUTING.md, "Import paths"). Returns the folder that holds the tree and the cache."""
    root = Path(__file__).resolve().parent
    mapping = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    base = Path(sys.prefix) / "batchspec-mypy"
    tree = base / "batchspec"
    tree.mkdir(parents=True, exist_ok=True)
    links = {p.name: p for p in (root / "batchspec").iterdir() if p.suffix in {".py", ".pyi"}}
    links.update({name.split(".", 1)[1]: root / folder for name, folder in mapping.items()})
    for stale in tree.iterdir():
        if stale.name not in links:
            stale.unlink()
    for name, target in links.items():
        link = tree / name
        if not (link.is_symlink() and link.resolve() == target.resolve()):
            link.unlink(missing_ok=True)
            link.symlink_to(target)
    return base


def _types(session: nox.Session, *args: str) -> None:
    base = _mypy_tree()
    _run(session, "mypy", "--cache-dir", str(base / "cache"), *args, env={"MYPYPATH": str(base)})


def _lint(session: nox.Session) -> None:
    _run(session, "ruff", "check", ".")
    _run(session, "ruff", "format", "--check", ".")


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """``ruff check`` and ``ruff format --check`` (pyproject.toml, [tool.ruff])."""
    _lint(session)


@nox.session(python=False)
def types(session: nox.Session) -> None:
    """mypy on the package as it installs (pyproject.toml, [tool.mypy])."""
    _types(session, *session.posargs)


@nox.session(python=False)
def unit(session: nox.Session) -> None:
    """The unit tier (``nox -s unit -- -k NAME`` passes pytest options on)."""
    _run(session, "pytest", *UNIT, *session.posargs)


@nox.session(python=False)
def runs(session: nox.Session) -> None:
    """The runs tier: about 12 minutes on 2 cores (11m55s measured with the upstream tier at 68f0b6c)."""
    _run(session, "pytest", "tests/runs", *session.posargs, env=ONE_THREAD)


@nox.session(python=False)
def upstream(session: nox.Session) -> None:
    """The upstream tier (needs ``pip install --no-deps nemo-automodel==0.7.0``)."""
    _run(session, "pytest", "tests/upstream", *session.posargs, env=ONE_THREAD)


@nox.session(python=False)
def ci(session: nox.Session) -> None:
    """What CI runs (.ci/run): lint, types, the unit tier, then the runs and upstream tiers in
    one pytest process, so that the upstream suite run overlaps the runs tier's tests."""
    _lint(session)
    _types(session)
    _run(session, "pytest", *UNIT)
    _run(session, "pytest", "tests/runs", "tests/upstream", env=ONE_THREAD)
