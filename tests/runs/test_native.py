"""The native backend (``backends/native``: a std-only Rust library behind a C ABI, wrapped by the
``batchspec_native`` package) is built and judged by the suite, and a real native fault in it is
isolated by the ``batchspec`` command.

The library is built with cargo into a temporary folder and the package is put on
``PYTHONPATH`` beside it (``pip install ./backends/native`` is the documented route; the tier
does not modify the running environment). Where cargo is missing, both tests skip with the fix.

CI runs a sample of the suite (``SAMPLE``: the test files that call the three native
functions); the full run is one command (CONTRIBUTING.md, backends/native/README.md):
``pip install ./backends/native && batchspec --backend=native --release``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _suite import ROOT, BackgroundRun, long_run

from batchspec.conformance.run.spec import spec_raising_clauses

NATIVE = ROOT / "backends" / "native"
CARGO = shutil.which("cargo")
NO_CARGO = (
    "cargo is not installed: the native backend's library cannot be built (install it with rustup: https://rustup.rs)"
)
LIBRARY = {"darwin": "libbatchspec_native.dylib", "win32": "batchspec_native.dll"}.get(
    sys.platform, "libbatchspec_native.so"
)

# the conformance files whose tests call convert_text_batch, build_packed_sequence_metadata or
# get_unpad_data: about a minute of CPU on 2 cores
SAMPLE = (
    "conformance/test_convert.py",
    "conformance/test_metadata.py",
    "conformance/test_output.py",
    "conformance/test_input_dtypes.py",
    "conformance/test_layouts.py",
    "conformance/properties/test_convert_invariants.py",
    "conformance/properties/test_metadata_invariants.py",
)


def build_native(folder: Path) -> dict:
    """Build the library (``cargo build --release --offline``) into ``folder`` and lay the package
    out beside it; the environment that imports it as ``batchspec_native``."""
    subprocess.run(
        [
            CARGO,
            "build",
            "--release",
            "--offline",
            "--quiet",
            "--manifest-path",
            str(NATIVE / "Cargo.toml"),
            "--target-dir",
            str(folder / "target"),
        ],
        check=True,
    )
    package = folder / "site" / "batchspec_native"
    shutil.copytree(NATIVE / "batchspec_native", package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy2(folder / "target" / "release" / LIBRARY, package / LIBRARY)
    path = os.pathsep.join(filter(None, [str(folder / "site"), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path)


class _Skipped:
    """What a long run gives when cargo is missing: nothing to read."""

    def result(self, timeout: float = 900) -> None:
        return None

    def stop(self) -> None:
        pass


def _start(folder: Path):
    if CARGO is None:
        return _Skipped()
    env = build_native(folder)
    return BackgroundRun(folder, *SAMPLE, "--backend=batchspec_native", "--release", "-n", "2", env=env)


native_run = long_run("native_run", _start)


def test_the_native_backend_passes_the_sampled_suite(native_run):
    if native_run is None:
        pytest.skip(NO_CARGO)
    assert "backend=batchspec_native version=" in native_run.output, native_run.output[-3000:]
    failures = native_run.report["failures"]
    assert failures == [], failures[:3]
    summary = re.search(r"^=* ?(\d+) passed(?P<rest>[^\n]*) in [\d.]+s", native_run.output, re.M)
    assert summary and int(summary.group(1)) >= 30, native_run.output[-3000:]
    assert "failed" not in summary.group("rest") and "error" not in summary.group("rest"), summary.group(0)
    # a release run limited to some files is incomplete (it names them), never pass, never fail
    verdict = native_run.report["verdict"]
    assert verdict["result"] == "incomplete" and verdict["limited_to"], verdict


def test_the_package_registers_the_native_entry_point():
    text = (NATIVE / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points."batchspec.backends"]\nnative = "batchspec_native"' in text
    assert 'name = "batchspec-native"' in text
    main = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "native" not in main.split("[tool.setuptools]")[1].split("[tool.setuptools.package-dir]")[0]


@pytest.mark.skipif(CARGO is None, reason=NO_CARGO)
def test_a_null_dereference_in_get_unpad_data_fails_its_test_and_the_run_goes_on(tmp_path):
    """``BATCHSPEC_NATIVE_FAULT=get_unpad_data`` makes the library read address 0 there (a real
    SIGSEGV in a worker, under the command's default distribution): the test that called it is
    reported failed as a dead worker, blamed on every clause it cites ([unpad-errors], the
    function's raising clause, among them), the other test of the file passes, the run ends with
    verdict fail and the report is written."""
    env = build_native(tmp_path / "build")
    env["BATCHSPEC_NATIVE_FAULT"] = "get_unpad_data"
    env["OMP_NUM_THREADS"] = "1"
    report = tmp_path / "report"
    command = [
        str(Path(sys.executable).with_name("batchspec")),
        "--backend=batchspec_native",
        "conformance/test_metadata.py",
        "-n",
        "1",
        f"--conformance-report={report}",
        "-p",
        "no:cacheprovider",
    ]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    result = json.loads((report / "report.json").read_text(encoding="utf-8"))
    tests = {t["nodeid"]: t["outcome"] for row in result["clauses"].values() for t in row["tests"]}
    failed = {f["nodeid"]: f for f in result["failures"]}
    assert list(failed) == ["conformance/test_metadata.py::test_get_unpad_data_on_uint8_int8_int16_masks"], output[
        -3000:
    ]
    crash = next(iter(failed.values()))
    assert "process died" in crash["message"] and "crashed while running" in crash["message"], crash
    assert spec_raising_clauses()["get_unpad_data"] in crash["clauses"] and crash["blame"] == ["every cited clause"]
    assert any(outcome == "passed" for node, outcome in tests.items() if node not in failed), "the run went on"
    assert done.returncode == 1 and result["verdict"]["result"] == "fail", output[-3000:]
