"""The run's report: what it says about the suite, the backend, the environment and the run
(``header``), the report itself (computed by ``verdict.build_report``; this module only renders
it), and its files in ``--conformance-report=DIR``: ``report.json`` (``dumps``) and ``report.md``
(``render_markdown``); ``results.jsonl`` is the Recorder's, conformance/run/recorder.py. Under
pytest-xdist the controller writes them. Several runs' reports as one clause x backend table:
``render_scoreboard`` (``python -m batchspec.conformance.tools.scoreboard``)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
from collections import defaultdict
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
from batchspec.conformance.run.stash import BACKEND, EXPECTATIONS
from batchspec.conformance.run.verdict import bounded, build_report

__all__ = [
    "MARKDOWN_FAILURES",
    "REPORT_JSON",
    "REPORT_MD",
    "RESULTS_LOG",
    "dumps",
    "header",
    "is_worker",
    "render_markdown",
    "render_scoreboard",
    "report_directory",
    "run_report",
    "suite_version",
    "write_report",
]

# the files --conformance-report=DIR writes: the report, and the results as they arrive
REPORT_JSON, REPORT_MD, RESULTS_LOG = "report.json", "report.md", "results.jsonl"
# report.md shows this many failures in full (the real failures first); report.json has them all
MARKDOWN_FAILURES = 20


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


def _hypothesis_settings() -> str:
    """The run's hypothesis settings, as the report's header shows them."""
    current = settings.default
    assert current is not None, "hypothesis always has a current settings profile"
    return (
        f"max_examples={current.max_examples}, derandomize={current.derandomize}, "
        f"database={'none' if current.database is None else 'default'}"
    )


def header(config: pytest.Config) -> dict:
    """What the report says about the suite, the backend, the environment and the run; a backend
    that was not loaded (refused, or a usage error came first) has ``loaded: false`` and
    ``unknown`` fields."""
    backend: Backend | None = config.stash.get(BACKEND, None)

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
            "hypothesis settings": _hypothesis_settings(),
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
    backend: Backend | None = config.stash.get(BACKEND, None)
    profiles = spec_profiles()
    return build_report(
        records,
        levels=spec_clauses(),
        expectations=config.stash.get(EXPECTATIONS, []),
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


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# report.md lists failures in this order (then by test id): what fails the run first
_FAILURE_ORDER = ("failed", "suite error", "unexpected pass", "expected failure")


def render_markdown(report: Mapping) -> str:
    """The report as Markdown, in reading order: what ran (the header table); the verdict and
    why (errors, incomplete reasons, MUST failures, suite errors, unexpected passes under
    ``--strict-expectations``); the failures, the first ``MARKDOWN_FAILURES`` in full with their
    reproduce commands (failures before expected failures); the warnings and expectations; the
    clause table; last, the clauses no test of the run checked.

    Raises:
        KeyError: ``report`` is not a ``build_report`` report."""
    verdict = report["verdict"]
    lines = [
        *_header_lines(report),
        *_verdict_sections(verdict),
        *_failure_section(report["failures"]),
        *_skip_section(verdict),
        *_warning_sections(verdict),
        *_clause_sections(report, verdict),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def _section(title: str, items: list[str]) -> list[str]:
    """A ``## title`` section of report.md, or nothing when it has no item."""
    return [f"## {title}", "", *items, ""] if items else []


def _header_lines(report: Mapping) -> list[str]:
    """What ran (suite, backend, capabilities, environment, run options) and the verdict line."""
    verdict, suite, backend = report["verdict"], report["suite"], report["backend"]
    if backend.get("loaded", True):
        backend_row = f"{backend['name']} {backend['version']}, targets SPEC {backend['spec_version']}, device {backend['device']}"
    else:
        backend_row = f"{backend['name']}: not loaded (see the verdict), device {backend['device']}"
    return [
        f"# batchspec conformance: {backend['name']} {backend['version']}",
        "",
        "| | |",
        "|---|---|",
        f"| suite | batchspec {suite['version']}, SPEC {suite['spec_version']}, golden index sha256 "
        f"`{suite['golden_index_sha256'][:16]}…` |",
        f"| backend | {_cell(backend_row)} |",
        f"| capabilities | {', '.join(backend['capabilities']) or 'none'} |",
        *(f"| {k} | {_cell(v)} |" for k, v in report["environment"].items()),
        *(f"| {k} | {_cell(v)} |" for k, v in report["run"].items()),
        "",
        f"**Verdict: {verdict['result'].upper()}** (exit status {verdict['exit_status']})",
        "",
    ]


def _why(verdict: Mapping, index: int) -> str:
    """The category and reason of expectation entry ``index``."""
    entry = {e["entry"]: e for e in verdict["expectations"]}[index]
    return f"{entry['category']}: {entry['reason']}"


def _unexpected_items(verdict: Mapping) -> list[str]:
    """One line per unexpected pass: the test or the clause, and why it was expected to fail."""
    items = []
    for u in verdict["unexpected_passes"]:
        what = f"`{u['nodeid']}`" if "nodeid" in u else f"[{u['clause']}]"
        items.append(f"- {what} ({_cell(_why(verdict, u['entry']))})")
    return items


_UNEXPECTED_TITLE = "Unexpected passes"


def _verdict_sections(verdict: Mapping) -> list[str]:
    """The verdict and why: errors, incomplete reasons, the selection, MUST failures, suite errors and,
    under ``--strict-expectations``, the unexpected passes."""
    lines: list[str] = []
    lines += _section("Why the run could not judge the backend", [f"- {_cell(e)}" for e in verdict.get("errors", ())])
    lines += _section("Why the run is incomplete", [f"- {reason}" for reason in verdict["incomplete"]])
    left_out, limited_to = verdict.get("left_out", {"count": 0, "tests": []}), verdict.get("limited_to", [])
    lines += _section(
        "Left out by the run's selection",
        ([f"- limited to: {_cell(', '.join(limited_to))}"] if limited_to else [])
        + (
            [
                f"- {left_out['count']} test(s) deselected (-k, -m, --deselect): {bounded(left_out['tests'], left_out['count'])}"
            ]
            if left_out["count"]
            else []
        ),
    )
    lines += _section(
        "MUST clauses that fail (the verdict)",
        [f"- [{c}]: {', '.join(f'`{n}`' for n in ids)}" for c, ids in verdict["must_failures"].items()],
    )
    lines += _section("Suite errors (no clause judged)", [f"- `{n}`" for n in verdict["suite_errors"]])
    if verdict["strict_expectations"]:
        lines += _section(_UNEXPECTED_TITLE + " (fail the run: --strict-expectations)", _unexpected_items(verdict))
    return lines


def _failure_section(failures: list[Mapping]) -> list[str]:
    """The first ``MARKDOWN_FAILURES`` failures in full, in ``_FAILURE_ORDER``, with their reproduce commands."""
    ordered = sorted(failures, key=lambda f: _FAILURE_ORDER.index(f["outcome"]))
    items = []
    for f in ordered[:MARKDOWN_FAILURES]:
        items += [
            f"### `{f['nodeid']}` ({f['outcome']}; {', '.join(f['clauses']) or 'no clause'}"
            + (f"; blamed by: {', '.join(f['blame'])})" if f.get("blame") else ")"),
            "",
            "```",
            f["message"].strip() or "(no message)",
            "```",
            "",
            f"Reproduce: `{f['reproduce']}`" + (f" (hypothesis: `{f['hypothesis']}`)" if f.get("hypothesis") else ""),
            "",
        ]
    if len(ordered) > MARKDOWN_FAILURES:
        items.append(f"{len(ordered) - MARKDOWN_FAILURES} more failures: see report.json")
    return _section("Failures", items)


def _skip_section(verdict: Mapping) -> list[str]:
    """What did not run, and what makes it run."""
    return _section(
        "Skipped and not supported (what did not run, and the fix)",
        [
            f"- {g['count']} {g['outcome']}: {_cell(g['reason'])}"
            + (f" — fix: `{g['fix']}`" if g.get("fix") else "")
            + f" ({', '.join(f'`{n}`' for n in g['tests'][:3])}{', …' if g['count'] > 3 else ''})"
            for g in verdict.get("skips", ())
        ],
    )


def _warning_sections(verdict: Mapping) -> list[str]:
    """Warnings and expectations: SHOULD failures, expected failures, unexpected passes (when they
    do not fail the run) and stale expectations."""
    lines = _section(
        "SHOULD clauses that fail (warnings)",
        [f"- [{c}]: {', '.join(f'`{n}`' for n in ids)}" for c, ids in verdict["should_failures"].items()],
    )
    lines += _section(
        "Expected failures",
        [
            f"- `{e['nodeid']}` [{', '.join(e['clauses'])}] ({_cell(_why(verdict, e['entry']))})"
            for e in verdict["expected_failures"]
        ],
    )
    if not verdict["strict_expectations"]:
        lines += _section(_UNEXPECTED_TITLE, _unexpected_items(verdict))
    lines += _section(
        "Stale expectations (they match no test of this run)",
        [
            f"- entry {e['entry']}: {e.get('test') or e.get('clause')} ({_cell(e['reason'])})"
            for e in verdict["stale_expectations"]
        ],
    )
    return lines


def _clause_sections(report: Mapping, verdict: Mapping) -> list[str]:
    """The clause table, then the clauses no test of the run checked."""
    rows = []
    for clause, row in report["clauses"].items():
        counts: defaultdict[str, int] = defaultdict(int)
        for test in row["tests"]:
            counts[test["outcome"]] += 1
        detail = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        rows.append(f"| {clause} | {row['level']} | {row['status']} | {detail} |")
    lines = _section(
        "Clauses", ["| clause | level | status | tests |", "|---|---|---|---|", *rows] if rows else ["No test ran."]
    )
    lines += _section(
        "MUST clauses of the declared profiles that no test checked",
        [f"- [{c}]" for c in verdict["unchecked_must_clauses"]],
    )
    lines += _section(
        "Clauses with no test in this run",
        [
            f"- {level}: {', '.join(report[key])}"
            for level, key in (("MUST", "untested_must_clauses"), ("SHOULD", "untested_should_clauses"))
            if report[key] and verdict["result"] != "error"  # no test ran: every clause would be listed
        ],
    )
    return lines


def render_scoreboard(reports: list[Mapping]) -> str:
    """One Markdown table of clause x backend statuses from several runs' ``report.json``, with
    each backend's verdict (the way ONNX publishes its per-backend table)."""
    reports = sorted(reports, key=lambda r: r["backend"]["name"])
    names = [f"{r['backend']['name']} {r['backend']['version']}" for r in reports]
    levels: dict[str, str] = {}
    for report in reports:
        levels.update({c: row["level"] for c, row in report["clauses"].items()})
    suites = sorted({f"batchspec {r['suite']['version']} (SPEC {r['suite']['spec_version']})" for r in reports})
    lines = [
        "# batchspec scoreboard",
        "",
        f"Suite: {', '.join(suites)}. A cell is the clause's status in that backend's run.",
        "",
        "| clause | level | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
        "| **verdict** | | " + " | ".join(f"**{r['verdict']['result']}**" for r in reports) + " |",
    ]
    for clause in sorted(levels):
        cells = [r["clauses"].get(clause, {}).get("status", "not run") for r in reports]
        lines.append(f"| {clause} | {levels[clause]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def dumps(report: Mapping) -> str:
    """The report as JSON text (sorted where order means nothing, so equal runs give equal bytes)."""
    return json.dumps(report, indent=2, sort_keys=False) + "\n"
