"""The batchspec conformance suite as a pytest plugin: ``--backend``, the run header, the
``clause``/``requires`` markers, capability checks, and the clause-by-clause report.

From a checkout, ``conformance/conftest.py`` loads it; ``pytest conformance --backend=NAME
[--device=cuda[:N]] [--clause-report=PATH]`` runs the suite (``--device``: conformance/device.py).

Clause statuses in the summary: ``FAIL`` (a test failed on this clause: its message names the
clause, or names none of the test's clauses), ``pass`` (every citing test passed),
``partial`` (some citing tests passed, others were not supported or failed on another
clause), ``inconclusive`` (every citing test failed on another clause), ``not supported``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from conformance.backends import CAPABILITIES, Backend, BackendError, available_backends, load_backend
from conformance.device import DeviceOptionError, check_device_option
from conformance.options import add_backend_option, add_device_option
from conformance.spec import SPEC_PATH, spec_clause_items, spec_clauses, spec_profiles, spec_version, split_citation

NOT_SUPPORTED = "NOT SUPPORTED"

settings.register_profile(
    "batchspec",
    max_examples=int(os.environ.get("BATCHSPEC_MAX_EXAMPLES", "60")),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("BATCHSPEC_HYPOTHESIS_PROFILE", "batchspec"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("batchspec")
    add_backend_option(group)
    group.addoption(
        "--list-backends",
        action="store_true",
        help="print the known backends (built in and registered) with their versions and capabilities, and exit",
    )
    group.addoption(
        "--launcher",
        default="mpiexec,torch",
        help="comma-separated launchers for the multi-rank scenarios: mpiexec (mpi4py + an mpiexec) and/or "
        "torch (torch.distributed, gloo, spawned processes) (default: both)",
    )
    add_device_option(group)
    group.addoption(
        "--clause-report",
        default=None,
        metavar="PATH",
        help="write a JSON report of outcomes per SPEC clause to PATH",
    )


LAUNCHERS = ("mpiexec", "torch")
# A failure message carrying this tag is about the suite's own machinery (e.g. rank processes
# that cannot import the backend), not about any clause: its clauses are reported inconclusive.
HARNESS_TAG = "[batchspec-harness]"


def _launchers(value: str) -> list[str]:
    """``--launcher``'s comma-separated names, validated."""
    names = [name.strip() for name in value.split(",")]
    if any(not name for name in names):
        raise pytest.UsageError(f"--launcher={value!r}: empty launcher name; choose from {list(LAUNCHERS)}")
    unknown = sorted(set(names) - set(LAUNCHERS))
    if unknown:
        raise pytest.UsageError(f"--launcher={value!r}: unknown launcher(s) {unknown}; choose from {list(LAUNCHERS)}")
    return names


MARKERS = (
    "clause(*ids): the SPEC.md clause ids a conformance test checks ('id' or one enumerated item 'id.N')",
    "requires(*capabilities): the conformance profiles (capabilities) a test needs",
)


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    if config.getoption("--list-backends"):
        print(_backend_list(config.getoption("--backend")))
        pytest.exit("listed the known backends", returncode=0)
    name = config.getoption("--backend")
    if not name:
        # Silently testing some default would let a CI typo pass green.
        raise pytest.UsageError(
            f"--backend is required: one of the known backends {sorted(available_backends())}, or a module / "
            "'module:attribute' path (--list-backends shows versions and capabilities)"
        )
    try:
        device = check_device_option(config.getoption("--device"))
    except DeviceOptionError as error:
        raise pytest.UsageError(str(error)) from None
    try:
        config._batchspec_backend = dataclasses.replace(load_backend(name), device=device)
    except BackendError as error:
        raise pytest.UsageError(str(error)) from None
    config._batchspec_launchers = _launchers(config.getoption("--launcher"))
    config._batchspec_outcomes = defaultdict(list)


def _backend_list(extra: str | None = None) -> str:
    """One line per known backend: name, import path, version, SPEC version, capabilities (or
    why it cannot be loaded); ``extra`` (``--backend`` given with ``--list-backends``, e.g. a
    module path of one's own) is listed too."""
    lines = ["batchspec backends (built in, and registered in the 'batchspec.backends' entry-point group):"]
    known = available_backends()
    if extra and extra not in known:
        known = {**known, extra: extra}
    for name, path in sorted(known.items()):
        try:
            backend = load_backend(name)
        except BackendError as error:
            lines.append(f"  {name} ({path}): cannot be loaded: {error}")
            continue
        lines.append(
            f"  {name} ({path}) version={backend.version} targets SPEC {backend.spec_version}; "
            f"capabilities: {', '.join(sorted(backend.capabilities)) or 'none'}"
        )
    return "\n".join(lines)


def suite_version() -> str:
    """The installed batchspec suite's version (pin it in a backend's CI), or ``unknown``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("batchspec")
    except PackageNotFoundError:
        return "unknown"


def pytest_report_header(config: pytest.Config) -> list[str]:
    backend: Backend = config._batchspec_backend
    missing = sorted(set(CAPABILITIES) - backend.capabilities)
    how = "declared" if backend.declared else "inferred from its attributes"
    return [
        f"batchspec conformance: backend={backend.name} version={backend.version} targets SPEC "
        f"{backend.spec_version}; suite {suite_version()} checks SPEC {spec_version()}",
        f"  capabilities ({how}): {', '.join(sorted(backend.capabilities)) or 'none'}",
        f"  device: {backend.device}"
        + (
            ""
            if backend.device == "cpu"
            else " (the tensor functions run there; the tests get their results where their inputs are)"
        ),
        f"  not supported: {', '.join(missing) or 'none'}",
        *(
            [f"  declared but unknown to this suite (ignored): {', '.join(sorted(backend.ignored))}"]
            if backend.ignored
            else []
        ),
    ]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """Zephon's catalog and aggregation scratch space under ``tmp_path`` (never the shared
    ``$TMPDIR``)."""
    monkeypatch.setenv("ZEPHON_CATALOG_DIR", str(tmp_path / "catalog"))
    return tmp_path


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend under test; conformance tests reach the code under test only through it."""
    return request.config._batchspec_backend


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    known = spec_clauses() if SPEC_PATH.exists() else None
    profiles = spec_profiles() if SPEC_PATH.exists() else None
    numbered = spec_clause_items() if SPEC_PATH.exists() else {}
    problems = []
    here = Path(__file__).resolve().parent
    for item in items:
        if not Path(str(item.path)).resolve().is_relative_to(here):
            continue
        citations = [cid for mark in item.iter_markers("clause") for cid in mark.args]
        # A citation is a clause id, or one enumerated item of it: "ctb-input-errors.3".
        ids = [split_citation(cid)[0] for cid in citations]
        if not ids:
            problems.append(f"{item.nodeid}: no @pytest.mark.clause(...)")
        elif known is not None:
            problems.extend(f"{item.nodeid}: unknown clause {cid!r}" for cid in ids if cid not in known)
            problems.extend(
                f"{item.nodeid}: clause {cid!r} has no item {number} (its items: {sorted(numbered.get(cid, ())) or 'none'})"
                for cid, number in map(split_citation, citations)
                if cid in known and number is not None and number not in numbered.get(cid, ())
            )
        for mark in item.iter_markers("requires"):
            problems.extend(
                f"{item.nodeid}: unknown capability {cap!r}" for cap in mark.args if cap not in CAPABILITIES
            )
        required = [cap for mark in item.iter_markers("requires") for cap in mark.args]
        if profiles is not None:
            # A test checks clauses of the profiles it requires (SPEC.md "Conformance"), so a
            # backend that declares none of them is never judged on it.
            problems.extend(
                f"{item.nodeid}: clause {cid!r} is in none of the profiles it requires {required}"
                for cid in ids
                if not any(cid in profiles.get(cap, ()) for cap in required)
            )
    if problems:
        raise pytest.UsageError("conformance tests must cite known SPEC clauses:\n  " + "\n  ".join(problems))


def pytest_runtest_setup(item: pytest.Item) -> None:
    backend: Backend = item.config._batchspec_backend
    for mark in item.iter_markers("requires"):
        for capability in mark.args:
            if not backend.supports(capability):
                pytest.skip(
                    f"{NOT_SUPPORTED}: backend {backend.name!r} does not declare capability "
                    f"{capability!r} ({CAPABILITIES[capability][0]})"
                )


CITED_CLAUSE = re.compile(r"\[([a-z0-9-]+)(?:\.\d+)?(?=[:,\]])")


def _failed_clauses(cited: list[str], longrepr: str, known: Iterable[str] = ()) -> set[str]:
    """The clauses a failure is about: the cited ones its message names in brackets
    (``[ctb-shift: ...]``); when it names none of them, the ``known`` clauses it names in
    brackets although the test does not cite them (a check every test passes through, such as
    ``--device``'s ``[tb-device]``); else all cited clauses. None for a failure of the suite's
    own machinery (``HARNESS_TAG``)."""
    if HARNESS_TAG in longrepr:
        return set()
    bracketed = {m.group(1) for m in CITED_CLAUSE.finditer(longrepr)}
    named = bracketed & set(cited)
    named |= {cid for cid in cited if re.search(rf"[\[ ,]{re.escape(cid)}(?:\.\d+)?[\]:,]", longrepr)}
    return named or (bracketed & set(known)) or set(cited)


def _failure_message(report: pytest.TestReport) -> str:
    """The failure's own message: the ``E`` lines of pytest's report, without the test source
    it prints above them (which holds the clause tags of assertions that did not fail)."""
    text = str(report.longrepr)
    message = "\n".join(line[1:] for line in text.splitlines() if line.startswith("E "))
    return message or text


def _reproduce_command(nodeid: str, backend_name: str, rootdir: Path, device: str = "cpu") -> str:
    """A shell command that reruns one test from anywhere: pytest's node ids are relative to
    its rootdir, so the command changes there first."""
    path = os.environ.get("PYTHONPATH")
    prefix = f"PYTHONPATH={shlex.quote(path)} " if path else ""
    return (
        f"cd {shlex.quote(str(rootdir))} && {prefix}{sys.executable} -m pytest {shlex.quote(nodeid)} "
        f"--backend={shlex.quote(backend_name)}" + ("" if device == "cpu" else f" --device={shlex.quote(device)}")
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    backend: Backend = item.config._batchspec_backend
    if report.failed:
        report.sections.append(
            (
                "batchspec",
                f"reproduce with: {_reproduce_command(item.nodeid, backend.name, item.config.rootpath, backend.device)}",
            )
        )
    if report.when == "call" or (report.when == "setup" and not report.passed):
        cited = list(dict.fromkeys(split_citation(cid)[0] for mark in item.iter_markers("clause") for cid in mark.args))
        outcome = report.outcome
        if report.skipped and NOT_SUPPORTED in str(report.longrepr):
            outcome = "not supported"
        known = spec_clauses() if report.failed and SPEC_PATH.exists() else {}
        blamed = _failed_clauses(cited, _failure_message(report), known) if report.failed else set()
        for clause in sorted(blamed - set(cited)):
            item.config._batchspec_outcomes[clause].append((item.nodeid, "failed"))
        for clause in cited:
            # A failure counts against the clauses it names; the test's other clauses were
            # not shown to be broken by it.
            clause_outcome = outcome if not report.failed or clause in blamed else "inconclusive"
            item.config._batchspec_outcomes[clause].append((item.nodeid, clause_outcome))
    return report


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    outcomes: dict[str, list[tuple[str, str]]] = config._batchspec_outcomes
    if not outcomes:
        return
    backend: Backend = config._batchspec_backend
    known = spec_clauses() if SPEC_PATH.exists() else {}
    rows = []
    for clause in sorted(outcomes):
        counts = defaultdict(int)
        for _, outcome in outcomes[clause]:
            counts[outcome] += 1
        if counts.get("failed"):
            status = "FAIL"
        elif counts.get("passed") and not counts.get("not supported") and not counts.get("inconclusive"):
            status = "pass"
        elif counts.get("passed"):
            status = "partial"  # some of its tests were not supported or stopped on another clause
        elif counts.get("inconclusive"):
            status = "inconclusive"
        else:
            status = "not supported"
        rows.append((clause, known.get(clause, "?"), status, dict(counts)))
    terminalreporter.section(f"batchspec clauses: backend {backend.name} {backend.version}")
    for clause, level, status, counts in rows:
        detail = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        terminalreporter.write_line(f"{status:>13}  {level:<6} {clause:<32} ({detail})")
    untested = sorted(c for c, level in known.items() if level == "MUST" and c not in outcomes)
    if untested:
        terminalreporter.write_line(f"MUST clauses with no test in this run: {', '.join(untested)}")
    untested_should = sorted(c for c, level in known.items() if level == "SHOULD" and c not in outcomes)
    if untested_should:
        terminalreporter.write_line(f"SHOULD clauses with no test in this run: {', '.join(untested_should)}")
    path = config.getoption("--clause-report")
    if path:
        report = {
            "backend": backend.name,
            "version": backend.version,
            "backend_spec_version": backend.spec_version,
            "spec_version": spec_version(),
            "suite_version": suite_version(),
            "capabilities": sorted(backend.capabilities),
            "device": backend.device,
            "clauses": {
                clause: {
                    "level": level,
                    "status": status,
                    "tests": [{"nodeid": nodeid, "outcome": outcome} for nodeid, outcome in outcomes[clause]],
                }
                for clause, level, status, _ in rows
            },
            "untested_must_clauses": untested,
            "untested_should_clauses": untested_should,
        }
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        terminalreporter.write_line(f"clause report written to {path}")
