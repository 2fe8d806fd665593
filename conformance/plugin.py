"""The batchspec conformance suite as a pytest plugin: ``--backend``, the run header, the
``clause``/``requires`` markers, capability checks, clause blame, expectations, the verdict and
the report.

From a checkout, ``conformance/conftest.py`` loads it: ``pytest conformance --backend=NAME``;
installed, the ``batchspec`` command runs it (``batchspec/cli.py``). Options:
``--device=cuda[:N]`` (conformance/device.py), ``--conformance-report=DIR`` (``report.json``
and ``report.md``, and ``results.jsonl``: each test's record as it arrives, one JSON object a
line, what a killed run leaves), ``--expectations=FILE`` and ``--strict-expectations``
(conformance/expectations.py), ``--release`` (a deterministic run: hypothesis derandomized,
no example database).

The report is written on every outcome once ``--conformance-report`` is known: a pass, a
failure, a refused backend or another usage error (verdict ``error``, with the reason), and an
interrupted run (Ctrl-C, or SIGTERM, which the controller turns into Ctrl-C's path: verdict
``incomplete`` with the results so far). Under pytest-xdist the controller writes it, and on
Ctrl-C or SIGTERM it stops the workers at once (SIGINT, then a kill after ``WORKER_GRACE_S``).

Blame: a failure is blamed on the clauses its ``ClauseFailure`` carries (the suite's asserts
raise it, conformance/helpers/asserts.py); an exception that escaped a contract function the
test called (conformance/backends.py, ``raised_in``) on the clause that lists that function's
faults (SPEC.md, "Raising on a valid input"); any other failure of a test (a plain ``assert``,
an exception from elsewhere, a crash or a timeout) on every clause the test cites; a
``SuiteError`` (the suite's own machinery) on none, as a suite error. Statuses and the verdict:
conformance/verdict.py. The exit status is the verdict's: 1 when a MUST clause fails or the
suite failed, 2 (or 1) when the run is incomplete, pytest's own (4, 5, 3) on an error, 0
otherwise (SHOULD failures and expected failures are reported, not fatal).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import re
import shlex
import signal
import sys
import textwrap
import threading
from collections import defaultdict
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from batchspec.conformance.backends import (
    CAPABILITIES,
    Backend,
    BackendError,
    available_backends,
    load_backend,
    raised_in,
)
from batchspec.conformance.device import DeviceOptionError, check_device_option
from batchspec.conformance.expectations import ExpectationsError, load_expectations, match_failure, match_test
from batchspec.conformance.golden.layout import INDEX
from batchspec.conformance.golden.layout import ROOT as GOLDEN_ROOT
from batchspec.conformance.helpers.asserts import ClauseFailure, SuiteError, skip, skip_reason
from batchspec.conformance.options import add_backend_option, add_device_option
from batchspec.conformance.spec import (
    SPEC_PATH,
    spec_clause_items,
    spec_clauses,
    spec_profiles,
    spec_raising_clauses,
    spec_version,
    split_citation,
)
from batchspec.conformance.verdict import build_report, dumps, render_markdown

NOT_SUPPORTED = "NOT SUPPORTED"

settings.register_profile(
    "batchspec",
    max_examples=int(os.environ.get("BATCHSPEC_MAX_EXAMPLES", "60")),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# Without the shrink phase a failing property reports its first failing example (with its
# @reproduce_failure line) at once; shrinking it to a minimal one took 1 to 2 minutes per failing
# property, which a release verdict does not need. --shrink puts the phase back.
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
# --release: the same examples on every run (a fixed seed derived from each test), no example
# database (the verdict depends on the backend and the suite version only), no shrinking
settings.register_profile(
    "batchspec-release",
    parent=settings.get_profile("batchspec"),
    derandomize=True,
    database=None,
    phases=NO_SHRINK,
)
# nightly: many more examples per property (BATCHSPEC_HYPOTHESIS_PROFILE=batchspec-nightly), for
# a scheduled job rather than a release gate; BATCHSPEC_MAX_EXAMPLES still overrides the count
settings.register_profile(
    "batchspec-nightly",
    parent=settings.get_profile("batchspec"),
    max_examples=int(os.environ.get("BATCHSPEC_MAX_EXAMPLES", "1000")),
)
# sweep: no shrinking (tests/mutants/sweep.py): a mutation sweep needs the verdict and the blame
# of the first failing example, not the smallest one, and shrinking is most of a failing run
settings.register_profile("batchspec-sweep", parent=settings.get_profile("batchspec"), phases=NO_SHRINK)
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
    group.addoption(
        "--rank-processes",
        choices=("forked", "new"),
        default="forked",
        help="how the multi-rank scenarios start their rank processes: forked (default) from one interpreter "
        "per pytest process that imported torch and zephon (never the backend) before it forks, or new "
        "interpreters (mpiexec or torch spawn start each rank from scratch; slower, about 2 s of CPU per rank)",
    )
    add_device_option(group)
    group.addoption(
        "--conformance-report",
        default=None,
        metavar="DIR",
        help="write the run's report to DIR: report.json and report.md (verdict, per-clause outcomes, "
        "failures with reproduce commands, versions)",
    )
    group.addoption(
        "--expectations",
        default=None,
        metavar="FILE",
        help="a TOML file of expected failures ([[expected]] entries with test or clause, reason, category): "
        "they are reported as such and do not fail the verdict",
    )
    group.addoption(
        "--strict-expectations",
        action="store_true",
        help="an expected failure that passes fails the verdict (delete its entry once the fix lands)",
    )
    group.addoption(
        "--batchspec-command",
        action="store_true",
        help="set by the batchspec command: reproduce commands use it (batchspec --backend=... TEST_ID)",
    )
    group.addoption(
        "--shrink",
        action="store_true",
        help="shrink a failing property's example to a minimal one (release runs report the first failing example "
        "and its @reproduce_failure line at once; shrinking takes up to minutes per failing property)",
    )
    group.addoption(
        "--release",
        action="store_true",
        help="a release run: hypothesis derandomized (a fixed seed per test), without its example database (so the "
        "same backend at the same suite version always gets the same verdict) and without shrinking (--shrink)",
    )


LAUNCHERS = ("mpiexec", "torch")


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
    """Check the run's options and load the backend; register the ``Recorder`` (the verdict and
    the report). ``--help`` needs no backend: it only lists the options.

    Raises:
        pytest.UsageError: no ``--backend``, or more than one; a backend that cannot be loaded
            or is refused (``load_backend``); a bad ``--device``, ``--launcher`` or
            ``--expectations``; a ``--conformance-report`` folder that cannot be created or
            written. Once the report folder is known, the report (verdict ``error``, with the
            reason) is written there first.
    """
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    # zephon 0.2.0 deprecates some of its own internals; those warnings are not the backend's
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:zephon.*")
    if config.getoption("help"):
        return  # pytest --help / batchspec --help: the options are listed, no test runs
    directory = _report_directory(config)
    try:
        _configure_run(config)
    except pytest.UsageError as error:
        if directory is None or _is_worker(config):
            raise
        report = _build_report(config, [], error=str(error), error_status=pytest.ExitCode.USAGE_ERROR)
        _write_report(directory, report)
        raise pytest.UsageError(
            f"{error}\n(verdict {report['verdict']['result']}: report written to {directory / REPORT_JSON} "
            f"and {REPORT_MD})"
        ) from None
    config.pluginmanager.register(Recorder(config), "batchspec-recorder")
    _share_cores(config)


def _share_cores(config: pytest.Config) -> None:
    """In one of several pytest-xdist workers, torch's intra-op threads are this worker's share
    of the cores (at least one): workers that each spin one thread per core slow each other down
    (the model checks ran 2 to 4 times slower so, with two workers on two cores)."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // workers))


def _is_worker(config: pytest.Config) -> bool:
    """A pytest-xdist worker (its controller records the results and writes the report)."""
    return hasattr(config, "workerinput")


def _report_directory(config: pytest.Config) -> Path | None:
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
    if not _is_worker(config):
        for name in (REPORT_JSON, REPORT_MD, RESULTS_LOG):
            (Path(directory) / name).unlink(missing_ok=True)
    return Path(directory)


def _configure_run(config: pytest.Config) -> None:
    """The backend, device, launchers and expectations of the run, on ``config``.

    Raises:
        pytest.UsageError: see ``pytest_configure``.
    """
    names = config.getoption("--backend") or []
    if len(names) > 1:
        raise pytest.UsageError(f"--backend was given {len(names)} times ({', '.join(names)}): a run tests one backend")
    name = names[0] if names else None
    config._batchspec_backend_spec = name
    if config.getoption("--list-backends"):
        print(_backend_list(name))
        pytest.exit("listed the known backends", returncode=0)
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
    path = config.getoption("--expectations")
    try:
        config._batchspec_expectations = load_expectations(path, spec_clauses()) if path else []
    except ExpectationsError as error:
        raise pytest.UsageError(str(error)) from None
    if config.getoption("--release"):
        settings.load_profile("batchspec-release")
    if config.getoption("--shrink"):
        settings.register_profile("batchspec-shrink", parent=settings.default, phases=list(Phase))
        settings.load_profile("batchspec-shrink")


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
        *(["  release run: hypothesis derandomized, no example database"] if config.getoption("--release") else []),
        *(
            [f"  expectations: {len(config._batchspec_expectations)} entries from {config.getoption('--expectations')}"]
            if config.getoption("--expectations")
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
                skip(
                    f"{NOT_SUPPORTED}: backend {backend.name!r} does not declare capability "
                    f"{capability!r} ({CAPABILITIES[capability][0]})",
                    f"implement it and add {capability!r} to BATCHSPEC_CAPABILITIES",
                )


def _exceptions(error: BaseException) -> list[BaseException]:
    """``error``, or the leaves of an exception group (hypothesis reports several distinct
    failures of one test as a group)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _exceptions(inner)]
    return [error]


def _blame(error: BaseException | None, cited: list[str], known: dict[str, str]) -> tuple[str, list[str]]:
    """``(outcome, blamed clauses)`` of a failed test phase: a ``SuiteError``, or a
    ``ClauseFailure`` naming a clause SPEC.md does not define (a suite bug), is a suite error
    blamed on nothing; ``ClauseFailure``s are blamed on their clauses; an exception that escaped
    a contract function (``raised_in``: the backend raised where the test expects an output) on
    the clause listing that function's faults (SPEC.md, "Raising on a valid input"); any other
    failure on every cited clause."""
    errors = _exceptions(error) if error is not None else []
    if any(isinstance(e, SuiteError) for e in errors):
        return "suite error", []
    raising = spec_raising_clauses()
    carried = [
        c
        for e in errors
        for c in (e.clauses if isinstance(e, ClauseFailure) else (raising.get(raised_in(e) or ""),))
        if c is not None
    ]
    if any(c not in known for c in carried):
        return "suite error", []
    if carried and all(isinstance(e, ClauseFailure) or raised_in(e) in raising for e in errors):
        return "failed", list(dict.fromkeys(carried))
    return "failed", list(dict.fromkeys([*carried, *cited]))


def _failure_message(report: pytest.TestReport) -> str:
    """The failure's own message: the ``E`` lines of pytest's report, without the test source
    it prints above them."""
    text = str(report.longrepr)
    message = textwrap.dedent("\n".join(line[1:] for line in text.splitlines() if line.startswith("E ")))
    return (message or text).strip()[:4000]


# pytest-xdist's --dist=loadgroup appends "@<group>" to the node ids of grouped tests; the
# multi-rank tests are grouped per launcher (conformance/test_multirank.py), so that one
# worker runs each launcher's scenarios and their module fixtures run once
XDIST_GROUP_PREFIX = "multirank-"


def plain_nodeid(nodeid: str) -> str:
    """``nodeid`` without pytest-xdist's ``@<group>`` suffix: the id pytest selects the test by."""
    return nodeid.rsplit(f"@{XDIST_GROUP_PREFIX}", 1)[0]


HYPOTHESIS_BLOB = re.compile(r"@reproduce_failure\([^)]*\)")


def _reproduce_command(nodeid: str, config: pytest.Config) -> str:
    """A shell command that reruns one test: under the ``batchspec`` command, that command with
    the node id (it resolves ids in the installed suite) and the run's ``--device``,
    ``--release`` and ``--expectations``; else pytest, from its rootdir (pytest's node ids are
    relative to it)."""
    backend: Backend = config._batchspec_backend
    options = [f"--backend={shlex.quote(config._batchspec_backend_spec)}"]
    if backend.device != "cpu":
        options.append(f"--device={shlex.quote(backend.device)}")
    if config.getoption("--batchspec-command"):
        options += ["--release"] if config.getoption("--release") else []
        expectations = config.getoption("--expectations")
        options += [f"--expectations={shlex.quote(expectations)}"] if expectations else []
        return f"batchspec {' '.join(options)} {shlex.quote(nodeid)}"
    path = os.environ.get("PYTHONPATH")
    prefix = f"PYTHONPATH={shlex.quote(path)} " if path else ""
    rootdir = shlex.quote(str(config.rootpath))
    return f"cd {rootdir} && {prefix}{sys.executable} -m pytest {shlex.quote(nodeid)} {' '.join(options)}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.failed:
        report.sections.append(
            (
                "batchspec",
                f"reproduce with: {_reproduce_command(plain_nodeid(item.nodeid), item.config)}",
            )
        )
    cited = list(dict.fromkeys(split_citation(cid)[0] for mark in item.iter_markers("clause") for cid in mark.args))
    if report.when == "setup":
        report.batchspec_cited = cited  # reaches pytest-xdist's controller even if the test then crashes
    decisive = report.when == "call" or (report.when == "setup" and not report.passed) or report.failed
    if decisive:
        report.batchspec_record = _record(item, call, report, cited)
    return report


def _record(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport, cited: list[str]) -> dict:
    """The test's record (conformance/verdict.py) from the phase that decided it; an expected
    failure becomes pytest's xfail, an expected failure that passes its XPASS (a failure under
    ``--strict-expectations``)."""
    config = item.config
    expectations = config._batchspec_expectations
    nodeid = plain_nodeid(item.nodeid)
    record = {"nodeid": nodeid, "cited": cited, "outcome": report.outcome, "blamed": [], "expectation": None}
    record["reproduce"] = _reproduce_command(nodeid, config)
    if report.skipped:
        record["outcome"] = "not supported" if NOT_SUPPORTED in str(report.longrepr) else "skipped"
        message = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        record["reason"], record["fix"] = skip_reason(message.removeprefix("Skipped: "))
    elif report.failed:
        outcome, blamed = _blame(call.excinfo.value if call.excinfo else None, cited, spec_clauses())
        blob = HYPOTHESIS_BLOB.search(str(report.longrepr))
        record.update(outcome=outcome, blamed=blamed, message=_failure_message(report))
        record["hypothesis"] = blob.group(0) if blob else None
        entry = match_failure(expectations, nodeid, blamed) if outcome == "failed" else None
        if entry is not None:
            record.update(outcome="expected failure", expectation=entry.index)
            report.outcome = "skipped"
            report.wasxfail = f"expected failure ({entry.category}): {entry.reason}"
    elif report.when == "call" and (entry := match_test(expectations, nodeid)) is not None:
        record.update(outcome="unexpected pass", expectation=entry.index)
        if config.getoption("--strict-expectations"):
            report.outcome = "failed"
            report.longrepr = f"[XPASS(strict)] expected to fail ({entry.category}): {entry.reason}"
        else:
            report.wasxfail = f"expected failure ({entry.category}): {entry.reason}"
    return record


def _header(config: pytest.Config) -> dict:
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


# the files --conformance-report=DIR writes: the report, and the results as they arrive
REPORT_JSON, REPORT_MD, RESULTS_LOG = "report.json", "report.md", "results.jsonl"
# after Ctrl-C or SIGTERM, how long pytest-xdist's workers get to stop before they are killed
WORKER_GRACE_S = 1.0
# why the run stopped, in the report, on a KeyboardInterrupt that names nothing else
CTRL_C = "KeyboardInterrupt: Ctrl-C or SIGINT"


def _build_report(
    config: pytest.Config,
    records: list[dict],
    *,
    interrupted: str | None = None,
    error: str | None = None,
    error_status: int = pytest.ExitCode.USAGE_ERROR,
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
        header=_header(config),
        declared_clauses={c for p in backend.capabilities for c in profiles.get(p, ())} if backend else (),
        interrupted=interrupted,
        release=config.getoption("--release"),
        error=error,
        error_status=error_status,
    )


def _write_report(directory: Path, report: dict) -> None:
    """``report.json`` and ``report.md`` in ``directory``, each replaced whole (written beside,
    then renamed): an interrupted write leaves the old file or none, never half of one.

    Raises:
        OSError: a file cannot be written.
    """
    for name, text in ((REPORT_JSON, dumps(report)), (REPORT_MD, render_markdown(report))):
        partial = directory / f".{name}.partial"
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, directory / name)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the controller's main thread: the run stops as on Ctrl-C, and its
    report says ``incomplete``."""


class Recorder:
    """Collects the records where pytest reports results (in pytest-xdist's controller when the
    run is distributed), logs each to ``results.jsonl`` as it arrives, then computes the
    verdict, writes the report and sets the exit status: on a pass, a failure, an interruption
    (Ctrl-C, SIGTERM, ``-x``), a usage error after configuration, no test selected, or an
    internal error."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: dict[str, dict] = {}
        self.cited: dict[str, list[str]] = {}
        self.report: dict | None = None
        self.stopped: str | None = None  # why the run stopped early (Ctrl-C, SIGTERM, pytest-xdist's -x)
        self.error: str | None = None  # a usage or internal error after configuration
        self.controller = not _is_worker(config)
        directory = config.getoption("--conformance-report")
        self.directory = Path(directory) if directory and self.controller else None
        # one JSON record per line, flushed: what a killed run leaves (the last line of a test id is its result)
        self._log = (self.directory / RESULTS_LOG).open("w", encoding="utf-8") if self.directory else None
        # SIGTERM (a CI job cancelled, a timeout) takes Ctrl-C's path in the controller: the report
        # is written, verdict incomplete. signal.signal works in the main thread only.
        self._sigterm = None
        if self.controller and threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, self._on_sigterm)
            self._sigterm = signal.SIG_DFL if previous is None else previous

    def _on_sigterm(self, signum: int, frame) -> None:
        signal.signal(signal.SIGTERM, self._sigterm)  # a second SIGTERM is not caught
        raise Terminated(signal.Signals(signum).name)

    def pytest_unconfigure(self) -> None:
        if self._log is not None:
            self._log.close()
        if self._sigterm is not None and signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            signal.signal(signal.SIGTERM, self._sigterm)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module skipped as a whole (the model checks without transformers) is recorded as one
        skipped entry, with its reason and fix, so the report says what did not run."""
        if not report.skipped or _is_worker(self.config):
            return
        message = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason, fix = skip_reason(message.removeprefix("Skipped: "))
        nodeid = plain_nodeid(report.nodeid)
        record = {"nodeid": nodeid, "cited": [], "outcome": "skipped", "blamed": [], "expectation": None}
        self._keep({**record, "reason": reason, "fix": fix, "reproduce": ""})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup" and hasattr(report, "batchspec_cited"):
            self.cited[plain_nodeid(report.nodeid)] = report.batchspec_cited
        record = getattr(report, "batchspec_record", None)
        if record is None and report.failed and report.when not in ("setup", "call", "teardown"):
            record = self._crash_record(report)  # pytest-xdist: the worker died running the test
        if record is None:
            return
        previous = self.records.get(record["nodeid"])
        if previous is not None and previous["outcome"] not in ("passed", "unexpected pass"):
            return  # a teardown error after a failure: the failure is what the test showed
        self._keep(record)

    def _keep(self, record: dict) -> None:
        """Record a decided test, and append it to results.jsonl at once."""
        self.records[record["nodeid"]] = record
        if self._log is not None:
            self._log.write(json.dumps(record) + "\n")
            self._log.flush()

    def _crash_record(self, report: pytest.TestReport) -> dict:
        """A test whose process died (a crash, or a timeout that killed it): a failure of every
        clause it cites."""
        nodeid = plain_nodeid(report.nodeid)
        cited = self.cited.get(nodeid, [])
        try:
            timeout = self.config.getoption("timeout", None) or self.config.getini("timeout")
            limit = f" (or a hang past the per-test timeout of {timeout} s)" if timeout else ""
        except ValueError:  # pytest-timeout is not loaded
            limit = ""
        return {
            "nodeid": nodeid,
            "cited": cited,
            "outcome": "failed" if cited else "suite error",
            "blamed": cited,
            "expectation": None,
            "message": f"the test's process died: a crash{limit}: {str(report.longrepr)[:3000]}",
            "reproduce": _reproduce_command(nodeid, self.config),
            "hypothesis": None,
        }

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session):
        try:
            return (yield)
        except pytest.UsageError as error:  # a test id that does not exist, a test citing no clause
            self.error = str(error)
            raise

    def pytest_internalerror(self, excrepr, excinfo: pytest.ExceptionInfo) -> None:
        if self.error is None:
            self.error = f"internal error: {excinfo.typename}: {excinfo.value}"

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo) -> None:
        value = excinfo.value
        if isinstance(value, pytest.exit.Exception):
            self.stopped = f"pytest.exit: {value.msg}"
        else:  # SIGTERM, pytest-xdist's stop (-x, a worker's Ctrl-C) and collection errors name themselves
            self.stopped = str(value) or CTRL_C
        if self.controller:
            self._stop_workers()

    def _stop_workers(self) -> None:
        """pytest-xdist's workers, stopped now rather than after their current tests: each gets
        SIGINT (as on Ctrl-C in a terminal; a test's own clean-up runs), and those still there
        after ``WORKER_GRACE_S`` are killed. Nothing when the run is not distributed, or its
        workers are done."""
        dsession = self.config.pluginmanager.getplugin("dsession")
        nodemanager = getattr(dsession, "nodemanager", None)
        if nodemanager is None or getattr(dsession, "session_finished", False):
            return
        try:
            for gateway in list(nodemanager.group):
                process = getattr(getattr(gateway, "_io", None), "popen", None)  # a popen gateway's worker
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGINT)
            nodemanager.group.terminate(WORKER_GRACE_S)
        except KeyboardInterrupt:  # a second Ctrl-C: the workers are killed at once
            nodemanager.group.terminate(0)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.controller:
            return  # a pytest-xdist worker: its controller reports
        if self._log is not None:
            self._log.close()
        status = session.exitstatus
        error = None
        if status == pytest.ExitCode.USAGE_ERROR:
            error = self.error or "a usage error (the run's output says which)"
        elif status == pytest.ExitCode.INTERNAL_ERROR:
            error = self.error or "an internal error (the run's output has the traceback)"
        elif status == pytest.ExitCode.NO_TESTS_COLLECTED and self.stopped is None:
            error = "no test was selected (the test ids, -k or -m select none)"
        elif self.config.getoption("collectonly"):
            return  # --collect-only: not a run
        stopped = session.shouldstop or session.shouldfail or self.stopped
        if not stopped and status == pytest.ExitCode.INTERRUPTED:
            stopped = "interrupted"
        self.report = _build_report(
            self.config,
            list(self.records.values()),
            interrupted=str(stopped) if stopped else None,
            error=error,
            error_status=status,
        )
        if self.directory is not None:
            _write_report(self.directory, self.report)
        session.exitstatus = self.report["verdict"]["exit_status"]

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.report is None:
            return
        backend: Backend = self.config._batchspec_backend
        verdict = self.report["verdict"]
        terminalreporter.section(f"batchspec clauses: backend {backend.name} {backend.version}")
        for clause, row in self.report["clauses"].items():
            counts = defaultdict(int)
            for test in row["tests"]:
                counts[test["outcome"]] += 1
            detail = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            terminalreporter.write_line(f"{row['status']:>16}  {row['level']:<6} {clause:<32} ({detail})")
        for level in ("MUST", "SHOULD") if verdict["result"] != "error" else ():  # no test ran: all of them
            if self.report[f"untested_{level.lower()}_clauses"]:
                terminalreporter.write_line(
                    f"{level} clauses with no test in this run: "
                    f"{', '.join(self.report[f'untested_{level.lower()}_clauses'])}"
                )
        notes = [
            ("; ".join(verdict["errors"]), verdict["errors"]),
            ("; ".join(verdict["incomplete"]), verdict["incomplete"]),
            (f"{len(verdict['must_failures'])} MUST clause(s) fail", verdict["must_failures"]),
            (f"{len(verdict['suite_errors'])} suite error(s)", verdict["suite_errors"]),
            (f"{len(verdict['should_failures'])} SHOULD clause(s) fail (warnings)", verdict["should_failures"]),
            (f"{len(verdict['expected_failures'])} expected failure(s)", verdict["expected_failures"]),
            (f"{len(verdict['unexpected_passes'])} unexpected pass(es)", verdict["unexpected_passes"]),
            (f"{len(verdict['stale_expectations'])} stale expectation(s)", verdict["stale_expectations"]),
        ]
        shown = "; ".join(text for text, items in notes if items)
        for group in verdict.get("skips", ()):
            fix = f"; fix: {group['fix']}" if group.get("fix") else ""
            terminalreporter.write_line(f"{group['count']} {group['outcome']}: {group['reason']}{fix}")
        terminalreporter.write_line(
            f"batchspec verdict: {verdict['result'].upper()} (exit status {verdict['exit_status']})"
            + (f": {shown}" if shown else "")
        )
        if self.directory is not None:
            terminalreporter.write_line(
                f"conformance report written to {self.directory / REPORT_JSON} and {REPORT_MD} "
                f"(results as they arrived: {RESULTS_LOG})"
            )
