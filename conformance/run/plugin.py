"""The batchspec conformance suite as a pytest plugin: its options, the run's configuration (the
backend, device, launchers, expectations), the run header, the fixtures, the capability skips,
and the hooks that hand each test's result to the record and the report.

From a checkout, ``conformance/conftest.py`` loads it: ``pytest conformance --backend=NAME``;
installed, the ``batchspec`` command runs it (``batchspec/cli.py``). Options:
``--device=cuda[:N]`` (conformance/run/device.py), ``--conformance-report=DIR`` (``report.json``
and ``report.md``, and ``results.jsonl``: each test's record as it arrives, one JSON object a
line, what a killed run leaves), ``--expectations=FILE`` and ``--strict-expectations``
(conformance/run/expectations.py), ``--release`` (a deterministic run: hypothesis derandomized,
no example database; conformance/run/hypothesis_profiles.py).

The jobs it hands on: the markers and the citation check (conformance/run/citations.py); a test's
record (conformance/run/result_records.py) and its blame (conformance/run/failure_blame.py); the report and its files
(conformance/run/report.py); collecting the records, the verdict and the exit status, also on a
usage error or an interrupted run (the ``Recorder``, conformance/run/recorder.py). Statuses and the
verdict: conformance/run/verdict.py. The exit status is the verdict's: 1 when a MUST clause fails or
the suite failed, 2 (or 1) when the run is incomplete, pytest's own (4, 5, 3) on an error, 0
otherwise (SHOULD failures and expected failures are reported, not fatal).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from batchspec.conformance.helpers.asserts import skip
from batchspec.conformance.multirank.launchers import parse_launchers, plain_nodeid
from batchspec.conformance.run.backends import CAPABILITIES, Backend, BackendError, available_backends, load_backend
from batchspec.conformance.run.citations import MARKERS, citation_problems, cited_clauses
from batchspec.conformance.run.device import DeviceOptionError, check_device_option
from batchspec.conformance.run.expectations import ExpectationsError, load_expectations
from batchspec.conformance.run.failure_blame import note_raised_on_valid_input
from batchspec.conformance.run.hypothesis_profiles import load_run_profile
from batchspec.conformance.run.options import add_backend_option, add_device_option
from batchspec.conformance.run.ordering import cheap_checks_first
from batchspec.conformance.run.recorder import Recorder
from batchspec.conformance.run.report import (
    REPORT_JSON,
    REPORT_MD,
    is_worker,
    report_directory,
    run_report,
    suite_version,
    write_report,
)
from batchspec.conformance.run.result_records import NOT_SUPPORTED, global_state_record, record_of, reproduce_command
from batchspec.conformance.run.spec import spec_clauses, spec_version
from batchspec.conformance.run.stash import BACKEND, BACKEND_SPEC, EXPECTATIONS, SELECTED_LAUNCHERS, STATE_CHANGES
from batchspec.conformance.run.torch_state import guarding_test


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
        "--run-timeout",
        type=float,
        default=RUN_TIMEOUT_S,
        metavar="SECONDS",
        help=f"the whole run's time bound: past it the run stops as on Ctrl-C, verdict incomplete with the results so "
        f"far (default {RUN_TIMEOUT_S:.0f}; the per-test bound is pytest-timeout's --timeout)",
    )
    group.addoption(
        "--release",
        action="store_true",
        help="a release run: hypothesis derandomized (a fixed seed per test), without its example database (so the "
        "same backend at the same suite version always gets the same verdict) and without shrinking (--shrink)",
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
    directory = report_directory(config)
    try:
        _configure_run(config)
    except pytest.UsageError as error:
        if directory is None or is_worker(config):
            raise
        report = run_report(config, [], error=str(error), error_status=pytest.ExitCode.USAGE_ERROR)
        write_report(directory, report)
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


def _configure_run(config: pytest.Config) -> None:
    """The backend, device, launchers and expectations of the run, on ``config.stash``
    (conformance/run/stash.py).

    Raises:
        pytest.UsageError: see ``pytest_configure``.
    """
    names = config.getoption("--backend") or []
    if len(names) > 1:
        raise pytest.UsageError(f"--backend was given {len(names)} times ({', '.join(names)}): a run tests one backend")
    name = names[0] if names else None
    config.stash[BACKEND_SPEC] = name
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
        config.stash[BACKEND] = dataclasses.replace(load_backend(name), device=device)
    except BackendError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[SELECTED_LAUNCHERS] = parse_launchers(config.getoption("--launcher"))
    _check_timeout(config)
    path = config.getoption("--expectations")
    try:
        config.stash[EXPECTATIONS] = load_expectations(path, spec_clauses()) if path else []
    except ExpectationsError as error:
        raise pytest.UsageError(str(error)) from None
    load_run_profile(release=config.getoption("--release"), shrink=config.getoption("--shrink"))


# the default bound of a whole run, in seconds: the full suite takes about 10 minutes on 2 cores
RUN_TIMEOUT_S = 3 * 3600.0


def _check_timeout(config: pytest.Config) -> None:
    """pytest-timeout's per-test limit, when it is loaded, is a positive number of seconds: its own
    reading of 0 or less is "no limit", which would switch hang protection off unseen.

    Raises:
        pytest.UsageError: ``--timeout`` (or the ``timeout`` setting), or ``--run-timeout``, is 0 or
            negative.
    """
    if config.getoption("--run-timeout") <= 0:
        raise pytest.UsageError(f"--run-timeout={config.getoption('--run-timeout')}: give a positive number of seconds")
    if not config.pluginmanager.hasplugin("timeout"):
        return
    value, source = config.getoption("timeout", None), "--timeout"
    if value is None:
        value, source = config.getini("timeout"), "the timeout setting"
    if value in (None, ""):
        return
    if float(value) <= 0:
        raise pytest.UsageError(
            f"{source}={value}: a hung test would never fail (pytest-timeout reads 0 or less as no limit); "
            "give a positive number of seconds (the batchspec command's default is 900)"
        )


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


def pytest_report_header(config: pytest.Config) -> list[str]:
    backend: Backend = config.stash[BACKEND]
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
        # a Triton (or other kernel) backend on CPU runs its kernels only under the interpreter (issue 33)
        f"  triton interpreter (TRITON_INTERPRET): {'on' if os.environ.get('TRITON_INTERPRET') == '1' else 'off'}",
        *(
            [f"  declared but unknown to this suite (ignored): {', '.join(sorted(backend.ignored))}"]
            if backend.ignored
            else []
        ),
        *(["  release run: hypothesis derandomized, no example database"] if config.getoption("--release") else []),
        *(
            [f"  expectations: {len(config.stash[EXPECTATIONS])} entries from {config.getoption('--expectations')}"]
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
    return request.config.stash[BACKEND]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test of the suite cites known clauses of the profiles it requires; the tests run
    cheap checks first (conformance/run/ordering.py: goldens, sections, properties, model checks).

    Raises:
        pytest.UsageError: the problems ``citation_problems`` finds, one a line.
    """
    problems = citation_problems(items, Path(__file__).resolve().parents[1])
    if problems:
        raise pytest.UsageError("conformance tests must cite known SPEC clauses:\n  " + "\n  ".join(problems))
    items[:] = cheap_checks_first(items, Path(__file__).resolve().parents[1])  # -x stops on the cheapest reproduction


def pytest_runtest_setup(item: pytest.Item) -> None:
    backend: Backend = item.config.stash[BACKEND]
    for mark in item.iter_markers("requires"):
        for capability in mark.args:
            if not backend.supports(capability):
                skip(
                    f"{NOT_SUPPORTED}: backend {backend.name!r} does not declare capability "
                    f"{capability!r} ({CAPABILITIES[capability][0]})",
                    f"implement it and add {capability!r} to BATCHSPEC_CAPABILITIES",
                )


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """A crashed or killed worker's test fails once, under every distribution mode
    (conformance/run/scheduling.py)."""
    from batchspec.conformance.run.scheduling import crash_isolating

    return crash_isolating(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """torch's process-wide settings are put back after the test, and a change the backend made
    is kept for the test's [global-state] record (conformance/run/torch_state.py, result_records.py)."""
    changes: list[str] = []
    item.stash[STATE_CHANGES] = changes
    with guarding_test(changes):
        return (yield)


# each captured stream of a test (stdout, stderr, log) is cut to this many characters, in the
# console, the JUnit XML and the report: a backend that prints megabytes must not flood CI's log
CAPTURED_OUTPUT_CAP = 20_000


def _capped(title: str, text: str) -> str:
    """``text`` of a report section; a captured stream longer than ``CAPTURED_OUTPUT_CAP`` keeps its
    first and last halves of the cap, with a line saying how many characters were cut."""
    if not title.startswith("Captured ") or len(text) <= CAPTURED_OUTPUT_CAP:
        return text
    half = CAPTURED_OUTPUT_CAP // 2
    return f"{text[:half]}\n[batchspec: {len(text) - 2 * half} characters of captured output cut here]\n{text[-half:]}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    # before the report is written: the note that a backend function raised on a valid input
    note_raised_on_valid_input(call.excinfo.value if call.excinfo else None)
    report = yield
    report.sections = [(title, _capped(title, text)) for title, text in report.sections]
    if report.failed:
        report.sections.append(
            (
                "batchspec",
                f"reproduce with: {reproduce_command(plain_nodeid(item.nodeid), item.config)}",
            )
        )
    cited = cited_clauses(item)
    if report.when == "setup":
        report.batchspec_cited = cited  # reaches pytest-xdist's controller even if the test then crashes
    decisive = report.when == "call" or (report.when == "setup" and not report.passed) or report.failed
    if decisive:
        report.batchspec_record = record_of(item, call, report, cited)
    if report.when == "call":
        report.batchspec_global_state = global_state_record(item)  # None unless the backend changed torch's settings
    return report
