"""The run's report: what it says about the suite, the backend, the environment and the run
(``header``), the report itself (``verdict.build_report``) and its files in
``--conformance-report=DIR`` (``report.json``, ``report.md``; ``results.jsonl`` is the
Recorder's, conformance/run/recorder.py). Under pytest-xdist the controller writes them."""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import Path

import pytest
from hypothesis import settings

from batchspec.conformance.run.backends import Backend
from batchspec.conformance.run.package_data import INDEX
from batchspec.conformance.run.package_data import ROOT as GOLDEN_ROOT
from batchspec.conformance.run.spec import spec_clauses, spec_profiles, spec_version
from batchspec.conformance.run.verdict import build_report, dumps, render_markdown

__all__ = [
    "REPORT_JSON",
    "REPORT_MD",
    "RESULTS_LOG",
    "header",
    "is_worker",
    "report_directory",
    "run_report",
    "suite_version",
    "write_report",
]

# the files --conformance-report=DIR writes: the report, and the results as they arrive
REPORT_JSON, REPORT_MD, RESULTS_LOG = "report.json", "report.md", "results.jsonl"


def is_worker(config: pytest.Config) -> bool:
    """A pytest-xdist worker (its controller records the results and writes the report)."""
    return hasattr(config, "workerinput")


def report_directory(config: pytest.Config) -> Path | None:
    """``--conformance-report``'s folder, created, with the report files of an earlier run in it
    removed (a stale report never passes for this run's); None without the option.

    Raises:
        pytest.UsageError: the folder cannot be created, or is not writable.
    """
    directory = config.getoption("--conformance-report")
    if not directory:
        return None
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise pytest.UsageError(f"--conformance-report={directory}: cannot create the folder: {error}") from None
    if not os.access(directory, os.W_OK):
        raise pytest.UsageError(f"--conformance-report={directory}: the folder is not writable")
    if not is_worker(config):
        for name in (REPORT_JSON, REPORT_MD, RESULTS_LOG):
            (Path(directory) / name).unlink(missing_ok=True)
    return Path(directory)


def suite_version() -> str:
    """The installed batchspec suite's version (pin it in a backend's CI), or ``unknown``."""
    try:
        return distribution_version("batchspec")
    except PackageNotFoundError:
        return "unknown"


def header(config: pytest.Config) -> dict:
    """What the report says about the suite, the backend, the environment and the run; a backend
    that was not loaded (refused, or a usage error came first) has ``loaded: false`` and
    ``unknown`` fields."""
    backend: Backend | None = getattr(config, "_batchspec_backend", None)

    def installed(name: str) -> str:
        try:
            return distribution_version(name)
        except PackageNotFoundError:
            return "not installed"

    if backend is not None:
        about_backend = {
            "name": backend.name,
            "version": backend.version,
            "spec_version": backend.spec_version,
            "capabilities": sorted(backend.capabilities),
            "declared": backend.declared,
            "device": backend.device,
            "loaded": True,
        }
    else:
        about_backend = {
            "name": ", ".join(config.getoption("--backend") or []) or "none given",
            "version": "unknown",
            "spec_version": "unknown",
            "capabilities": [],
            "declared": False,
            "device": config.getoption("--device"),
            "loaded": False,
        }
    return {
        "suite": {
            "name": "batchspec",
            "version": suite_version(),
            "spec_version": spec_version(),
            "golden_index_sha256": hashlib.sha256((GOLDEN_ROOT / INDEX).read_bytes()).hexdigest(),
        },
        "backend": about_backend,
        "environment": {
            "python": platform.python_version(),
            **{name: installed(name) for name in ("torch", "zephon", "numpy", "hypothesis", "pytest")},
            "platform": platform.platform(),
        },
        "run": {
            "release": config.getoption("--release"),
            "hypothesis settings": f"max_examples={settings.default.max_examples}, derandomize={settings.default.derandomize}, "
            f"database={'none' if settings.default.database is None else 'default'}",
            "expectations": config.getoption("--expectations") or "none",
            "strict_expectations": config.getoption("--strict-expectations"),
            "arguments": shlex.join(str(a) for a in config.invocation_params.args),
        },
    }


def run_report(
    config: pytest.Config,
    records: list[dict],
    *,
    interrupted: str | None = None,
    error: str | None = None,
    error_status: int = pytest.ExitCode.USAGE_ERROR,
    collection_errors: Sequence[Mapping[str, str]] = (),
    left_out: Sequence[str] = (),
    limited_to: Sequence[str] = (),
    never_ran: Sequence[str] = (),
) -> dict:
    """The run's report (``verdict.build_report``) from what ``config`` knows: the backend's
    declared profiles and the expectations when they were loaded, none otherwise."""
    backend: Backend | None = getattr(config, "_batchspec_backend", None)
    profiles = spec_profiles()
    return build_report(
        records,
        levels=spec_clauses(),
        expectations=getattr(config, "_batchspec_expectations", []),
        strict_expectations=config.getoption("--strict-expectations"),
        header=header(config),
        declared_clauses={c for p in backend.capabilities for c in profiles.get(p, ())} if backend else (),
        interrupted=interrupted,
        release=config.getoption("--release"),
        error=error,
        error_status=error_status,
        collection_errors=collection_errors,
        left_out=left_out,
        limited_to=limited_to,
        never_ran=never_ran,
    )


def write_report(directory: Path, report: dict) -> None:
    """``report.json`` and ``report.md`` in ``directory``, each replaced whole (written beside,
    then renamed): an interrupted write leaves the old file or none, never half of one.

    Raises:
        OSError: a file cannot be written.
    """
    for name, text in ((REPORT_JSON, dumps(report)), (REPORT_MD, render_markdown(report))):
        partial = directory / f".{name}.partial"
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, directory / name)
