"""The suite as an installed package, used from a backend's own repository: the wheel built
from this checkout, and ``docs/backend-guide.md`` run as written.

The guide's ``<!-- file: NAME -->`` blocks become the files of a backend repository in a
temporary directory outside the checkout, and its ``<!-- run -->`` block runs there, line by
line, in a fresh venv. That venv gets batchspec's dependencies (torch, zephon, pip, ...) from
this project's venv through a ``.pth`` line instead of installing them again (``PIP_NO_DEPS``):
``.pth`` files are not processed in a directory added that way, so the checkout's editable
install stays invisible there, and every ``batchspec`` module the run imports comes from the wheel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "backend-guide.md"
# The backend repository's own pytest configuration: the suite's run must not read it (this
# addopts would make pytest refuse to start).
BACKEND_REPO_CONFIG = '\n[tool.pytest.ini_options]\naddopts = "--an-option-only-this-repository-knows"\n'
BUILD_LEFTOVERS = (".venv", ".git", "build", "reports", ".pytest_cache", ".hypothesis", "__pycache__", "*.egg-info")


def _run(command: list, cwd: Path, check: bool = True, env: dict | None = None, shell: bool = False):
    done = subprocess.run(
        command if shell else [str(c) for c in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        shell=shell,
    )
    if check and done.returncode != 0:
        pytest.fail(f"{command} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-3000:]}")
    return done


def guide_blocks() -> tuple[dict[str, str], list[str]]:
    """The guide's ``<!-- file: NAME -->`` blocks (name -> text) and its ``<!-- run -->`` commands."""
    text = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- (file: (\S+)|run) -->\n```[a-z]*\n(.*?)```", text, flags=re.S)
    files = {name: body for marker, name, body in blocks if marker.startswith("file")}
    commands = [line for marker, _, body in blocks if marker == "run" for line in body.splitlines() if line.strip()]
    return files, commands


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the checkout (the build leaves no ``build/`` here)."""
    source = tmp_path_factory.mktemp("source") / "batchspec"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*BUILD_LEFTOVERS), symlinks=True)
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", dist, source], dist)
    (built,) = dist.glob("batchspec-*.whl")
    return built


def test_the_wheel_installs_one_top_level_package_with_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top_level == {"batchspec"}, f"the wheel installs {sorted(top_level)}"
    for data in (
        "batchspec/SPEC.md",
        "batchspec/pytest.ini",
        "batchspec/golden/index.json",
        "batchspec/golden/corpus/tokenizer.json",
        "batchspec/conformance/conftest.py",
    ):
        assert data in names, f"{data} is missing from {wheel.name}"
    index = json.loads(zipfile.ZipFile(wheel).read("batchspec/golden/index.json"))
    missing = sorted({f"batchspec/golden/{name}" for name in index["files"]} - set(names))
    assert not missing, f"golden files in the index but not in the wheel: {missing[:5]}"
    assert zipfile.ZipFile(wheel).read("batchspec/SPEC.md") == (REPO / "SPEC.md").read_bytes()


def test_the_backend_guide_runs_as_written_from_a_backend_repository(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)  # pip, setuptools and the rest come through the .pth line
    python = env_dir / "bin" / "python"
    site = Path(
        _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path).stdout.strip()
    )
    (site / "batchspec_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")

    files, commands = guide_blocks()
    assert set(files) == {"mybackend/__init__.py", "pyproject.toml", "batchspec-expectations.toml"}
    repo = tmp_path / "mybackend-repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text + (BACKEND_REPO_CONFIG if name == "pyproject.toml" else ""), encoding="utf-8")
    (repo / "wheels").mkdir()
    shutil.copy(wheel, repo / "wheels" / wheel.name)
    env = dict(
        os.environ,
        PATH=f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}",
        PIP_NO_DEPS="1",  # the dependencies are there already (see the module docstring)
        PIP_NO_BUILD_ISOLATION="0",  # pip's spelling of --no-build-isolation
        VIRTUAL_ENV=str(env_dir),
    )
    env.pop("PYTHONPATH", None)
    outputs = [_run(command, repo, env=env, shell=True).stdout for command in commands]

    for generic in ("reference", "conformance", "backends", "bench", "golden"):
        done = _run([python, "-c", f"import {generic}"], cwd=repo, check=False, env=env)
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, f"`import {generic}` works in the venv"
    where = _run([python, "-c", "import batchspec.conformance as c; print(c.__file__)"], repo, env=env).stdout
    assert where.startswith(str(site)), f"batchspec.conformance comes from {where}, not the wheel"
    assert (
        "mybackend (mybackend) version=1.4.0 targets SPEC 1.4; capabilities: packed_metadata, unpad_data" in outputs[3]
    )

    report = json.loads((repo / "reports" / "conformance" / "report.json").read_text(encoding="utf-8"))
    assert (report["backend"]["name"], report["backend"]["version"]) == ("mybackend", "1.4.0")
    assert report["run"]["release"] is True and report["verdict"]["result"] == "pass"
    statuses = report["verdict"]["clause_statuses"]
    assert statuses["unpad-indexed"] in ("pass", "partial") and statuses["loader-next"] == "not supported"
    assert statuses["meta-cu-seqlens"] == "unexpected pass"  # a clause of the unexpectedly passing test
    # the guide's expectation names a test mybackend passes: the state right after a fix lands
    assert report["verdict"]["unexpected_passes"] == [
        {"nodeid": "conformance/test_goldens.py::test_golden_case[test_meta_example_k_empty_row]", "entry": 0}
    ]
    assert (repo / "reports" / "conformance" / "report.md").is_file()
    assert (repo / ".pytest_cache").is_dir(), "the run keeps pytest's cache in the directory it starts in"
