"""The conformance suite itself: it runs green against the reference, covers every MUST
clause, reports unsupported capabilities, and rejects unknown backends helpfully."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
from _suite import ROOT, run_conformance

from batchspec import reference
from batchspec.conformance.helpers.asserts import ClauseFailure, SuiteError
from batchspec.conformance.run.backends import BUILTIN_BACKENDS
from batchspec.conformance.run.failure_blame import blame_failure, note_raised_on_valid_input
from batchspec.conformance.run.plugin import pytest_addoption
from batchspec.conformance.run.report import suite_version
from batchspec.conformance.run.spec import spec_clauses, spec_version
from batchspec.conformance.tools.goldens import load_all

# tests/probe_backends/partial_backend.py importable, with the repository behind it.
PARTIAL_BACKEND_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "probe_backends"), str(ROOT)]))


def outcome(testcase) -> str:
    for child in testcase:
        if child.tag in {"failure", "error"}:
            return "failed"
        if child.tag == "skipped":
            return "skipped"
    return "passed"


def test_reference_passes_the_whole_suite(reference_run):
    assert reference_run.returncode == 0, reference_run.output[-5000:]
    outcomes = [outcome(t) for t in reference_run.testcases]
    assert outcomes.count("failed") == 0
    assert outcomes.count("skipped") == 0, "the reference declares every capability the suite tests"
    assert outcomes.count("passed") >= 30, f"only {outcomes.count('passed')} conformance tests passed"


def test_run_header_names_the_backend_and_version(reference_run):
    assert "batchspec conformance: backend=reference version=0.1.0" in reference_run.output


def test_real_data_scenario_ran_and_passed(reference_run):
    real = [t for t in reference_run.testcases if "test_real_data" in t.get("classname", "")]
    assert len(real) >= 1 and all(outcome(t) == "passed" for t in real), [t.get("name") for t in real]


def test_every_clause_is_checked_by_a_passing_test(reference_run):
    """Every MUST clause and every SHOULD clause (all of them bind a backend) has a
    conformance test, and each shows in the clause summary."""
    clauses = spec_clauses()
    report = reference_run.report["clauses"]
    untested = sorted(set(clauses) - set(report))
    assert not untested, f"clauses with no conformance test: {untested}"
    assert set(report) <= set(clauses), f"the report lists unknown clauses: {sorted(set(report) - set(clauses))}"
    # Checks that cite one enumerated item ("contract-validation.4") count under their clause: the
    # golden cases of golden/cases/contract.py that cite an item of [contract-validation].
    item_cases = {c.name for c in load_all() if any(cid.startswith("contract-validation.") for cid in c.clauses)}
    assert len(item_cases) >= 9, sorted(item_cases)  # one case per item at least (items 1-6)
    assert {
        name for name in item_cases for t in report["contract-validation"]["tests"] if f"[{name}]" in t["nodeid"]
    } == item_cases
    for cid, level in clauses.items():
        assert report[cid]["level"] == level, (cid, report[cid]["level"], level)
        assert f" {level:<6} {cid} " in reference_run.output, f"{cid} is missing from the clause summary"
    failing = sorted(cid for cid, row in report.items() if row["status"] != "pass")
    assert not failing, f"clauses not passing against the reference: {failing}"


def test_clause_ids_are_unique_in_spec():
    text = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    ids = re.findall(r"\*\*\[([a-z0-9-]+)\]\*\*\s+(?:MUST|SHOULD)", text)
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, f"clause ids defined twice in SPEC.md: {duplicates}"
    assert len(ids) >= 30


def test_unknown_backend_lists_the_known_ones(tmp_path):
    run = run_conformance(tmp_path, "conformance", "--backend=no_such_backend", "-q")
    assert run.returncode != 0
    assert "unknown backend 'no_such_backend'" in run.output
    assert "reference" in run.output and "module:attribute" in run.output


def test_partial_backend_reports_not_supported(tmp_path):
    run = run_conformance(
        tmp_path,
        "conformance/test_goldens.py",
        "-k",
        "unpad or meta",
        "--backend=partial_backend:BACKEND",
        "-rs",
        env=PARTIAL_BACKEND_ENV,
    )
    assert run.returncode == 0, run.output[-3000:]
    assert "backend=partial_backend:BACKEND version=partial-0" in run.output
    statuses = {cid: row["status"] for cid, row in run.report["clauses"].items()}
    assert statuses["unpad-errors"] == "pass" and statuses["unpad-indexed"] == "pass"
    assert statuses["meta-indices"] == "not supported" and statuses["meta-errors"] == "not supported"
    assert (
        "NOT SUPPORTED: backend 'partial_backend:BACKEND' does not declare capability 'packed_metadata'" in run.output
    )


def test_a_failure_is_blamed_on_the_clauses_its_exception_carries():
    """Blame is read from the exception, never from the failure's text: a ``ClauseFailure``'s
    clauses (a clause the test does not cite too, such as --device's [tb-device]); any other
    failure, every cited clause; the suite's own failure (``SuiteError``, or a ``ClauseFailure``
    naming no SPEC clause), no clause."""
    cited = ["state-roundtrip", "state-multirank-resume", "state-envelope"]
    known = spec_clauses()
    carried = ClauseFailure(
        "rank 1 resumed [[2]], but should continue with [[6]] [state-roundtrip]", "state-multirank-resume"
    )
    assert blame_failure(carried, cited, known)[:2] == ("failed", ["state-multirank-resume"])
    assert blame_failure(AssertionError("assert 0 != 0 [state-envelope]"), cited, known)[:2] == ("failed", cited)
    assert blame_failure(ValueError("the backend raised"), cited, known)[:2] == ("failed", cited)
    assert blame_failure(ClauseFailure("labels is on cpu", "tb-device"), cited, known)[:2] == ("failed", ["tb-device"])
    assert blame_failure(SuiteError("rank 0 wrote no result"), cited, known)[:2] == ("suite error", [])
    assert blame_failure(ClauseFailure("x", "no-such-clause"), cited, known)[:2] == ("suite error", [])
    group = ExceptionGroup("two", [ClauseFailure("a", "state-envelope"), ClauseFailure("b", "state-roundtrip.1")])
    assert blame_failure(group, cited, known)[:2] == ("failed", ["state-envelope", "state-roundtrip"])
    mixed = ExceptionGroup("two", [ClauseFailure("a", "state-envelope"), KeyError("k")])
    assert blame_failure(mixed, cited, known)[:2] == (
        "failed",
        ["state-envelope", *[c for c in cited if c != "state-envelope"]],
    )


def test_an_exception_a_contract_function_raised_is_blamed_on_the_clause_listing_its_faults():
    """A backend function that raises where the test expects an output breaks the clause that
    lists its faults (SPEC.md, "Raising on a valid input"), whatever the test cites; an
    exception raised outside the contract's functions keeps the cited clauses."""
    from types import SimpleNamespace

    from batchspec.conformance.run.backends import Backend, raised_in

    def get_unpad_data(attention_mask):
        raise RuntimeError("view size is not compatible with input tensor's size and stride")

    def build_packed_sequence_metadata(attention_mask):
        raise OverflowError("value cannot be converted to type int8 without overflow")

    impl = SimpleNamespace(get_unpad_data=get_unpad_data, build_packed_sequence_metadata=build_packed_sequence_metadata)
    backend = Backend("planted", "0", frozenset(), True, "1.1", impl)
    cited = ["unpad-binary", "unpad-outputs", "tb-no-aliasing"]
    known = spec_clauses()
    errors = {}
    for name in ("get_unpad_data", "build_packed_sequence_metadata"):
        try:
            getattr(backend, name)(None)
        except Exception as error:  # the planted raise
            errors[name] = error
    assert raised_in(errors["get_unpad_data"]) == "get_unpad_data"
    # the note is added when the exception fails the test, not when a check may still catch it
    assert not getattr(errors["get_unpad_data"], "__notes__", None)
    note_raised_on_valid_input(errors["get_unpad_data"])
    assert "[unpad-errors]" in "".join(errors["get_unpad_data"].__notes__)
    assert blame_failure(errors["get_unpad_data"], cited, known)[:2] == ("failed", ["unpad-errors"])
    assert blame_failure(errors["build_packed_sequence_metadata"], cited, known)[:2] == ("failed", ["meta-errors"])
    group = ExceptionGroup("two", [errors["get_unpad_data"], ClauseFailure("a", "unpad-outputs")])
    assert blame_failure(group, cited, known)[:2] == ("failed", ["unpad-errors", "unpad-outputs"])
    assert blame_failure(RuntimeError("raised by the suite"), cited, known)[:2] == ("failed", cited)
    assert backend.get_unpad_data.__wrapped__ is get_unpad_data  # signatures stay inspectable


def test_a_bad_launcher_stops_the_run_with_a_usage_error(tmp_path):
    for value, words in (("foo", "unknown launcher(s) ['foo']"), ("torch,", "empty launcher name")):
        run = run_conformance(
            tmp_path / value.strip(","),
            "conformance/test_checkpoint_ranks.py",
            "--backend=reference",
            f"--launcher={value}",
        )
        assert run.returncode == 4, run.output[-2000:]
        assert words in run.output and "choose from ['mpiexec', 'torch']" in run.output


def test_a_module_name_is_a_backend_and_multirank_tests_need_their_capability(tmp_path):
    run = run_conformance(
        tmp_path, "conformance/test_checkpoint_ranks.py", "--backend=partial_backend", "-rs", env=PARTIAL_BACKEND_ENV
    )
    assert run.returncode == 0, run.output[-3000:]
    assert "backend=partial_backend version=unknown" in run.output
    statuses = {cid: row["status"] for cid, row in run.report["clauses"].items()}
    assert statuses["state-all-ranks-identical"] == "not supported", statuses
    assert "does not declare capability 'zephon_loader'" in run.output


def _module_backend(tmp_path, name: str, body: str) -> dict:
    """Write ``name.py`` holding ``body`` under ``tmp_path``; the environment that imports it."""
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))


def test_a_backend_of_another_major_spec_version_is_refused_before_any_test_runs(tmp_path):
    env = _module_backend(
        tmp_path,
        "future_backend",
        "from batchspec.reference import *\nfrom batchspec.reference import BATCHSPEC_CAPABILITIES\nBATCHSPEC_SPEC_VERSION = '2.0'\n",
    )
    run = run_conformance(tmp_path, "conformance/test_output.py", "--backend=future_backend", env=env)
    assert run.returncode == 4, run.output[-2000:]  # pytest's usage error: nothing was collected or run
    assert not run.testcases
    assert f"targets SPEC 2.0, but this suite checks SPEC {spec_version()}" in run.output, run.output[-2000:]


def test_the_spec_version_declaration_is_required_and_minor_versions_are_compatible(tmp_path, monkeypatch):

    from batchspec import reference
    from batchspec.conformance.run import backends
    from batchspec.conformance.run.backends import BackendError, load_backend

    def backend_with(**names):
        module = SimpleNamespace(get_unpad_data=reference.get_unpad_data, **names)
        monkeypatch.setattr(backends, "_import_target", lambda path: module)
        return load_backend("stand_in")

    try:
        backend_with()
    except BackendError as error:
        assert "does not declare BATCHSPEC_SPEC_VERSION" in str(error) and repr(spec_version()) in str(error)
    else:
        raise AssertionError("a backend without BATCHSPEC_SPEC_VERSION was accepted")
    for bad in ("1", "one.zero", "1.x"):
        try:
            backend_with(BATCHSPEC_SPEC_VERSION=bad)
        except BackendError as error:
            assert repr(bad) in str(error) and "MAJOR.MINOR" in str(error)
        else:
            raise AssertionError(f"BATCHSPEC_SPEC_VERSION={bad!r} was accepted")
    # A later minor version of the same major, and capability names this suite does not know
    # (a later minor's profiles), are accepted; the unknown names are ignored.
    later = backend_with(BATCHSPEC_SPEC_VERSION="1.5", BATCHSPEC_CAPABILITIES=["unpad_data", "future_profile"])
    assert later.spec_version == "1.5" and later.capabilities == frozenset({"unpad_data"})
    assert later.ignored == frozenset({"future_profile"})


def test_the_report_records_the_spec_and_suite_versions(reference_run):
    report = reference_run.report
    assert report["suite"]["spec_version"] == spec_version()
    assert report["backend"]["spec_version"] == reference.BATCHSPEC_SPEC_VERSION
    assert report["suite"]["version"] not in {"", None, "unknown"}
    assert report["verdict"]["suite_version"] == report["suite"]["version"]
    assert f"targets SPEC {reference.BATCHSPEC_SPEC_VERSION}; suite" in reference_run.output
    assert f"checks SPEC {spec_version()}" in reference_run.output


def test_a_run_without_backend_is_a_usage_error_that_lists_the_known_backends(tmp_path):
    """Silently testing a default backend would let a CI typo pass green."""
    run = run_conformance(tmp_path, "conformance/test_goldens.py")
    assert run.returncode == 4 and not run.testcases, run.output[-2000:]
    listed = re.search(r"--backend is required: one of the known backends (\[[^\]]*\])", run.output)
    assert listed, run.output[-2000:]
    # every built-in backend, and any registered in the environment's entry points (batchspec-native)
    assert set(BUILTIN_BACKENDS) <= set(ast.literal_eval(listed.group(1))), run.output[-2000:]


def test_list_backends_prints_names_versions_and_capabilities(tmp_path):
    run = run_conformance(tmp_path, "conformance/test_goldens.py", "--list-backends")
    assert run.returncode == 0, run.output[-2000:]
    assert (
        f"reference (batchspec.reference) version=0.1.0 targets SPEC {spec_version()}; capabilities: adapt_model_inputs,"
        in run.output
    )
    assert "vectorized (batchspec.backends.vectorized) version=0.1.0" in run.output
    # A backend of one's own, given with --backend, is listed too (its capabilities checked).
    run = run_conformance(
        tmp_path / "own",
        "conformance/test_goldens.py",
        "--list-backends",
        "--backend=partial_backend:BACKEND",
        env=PARTIAL_BACKEND_ENV,
    )
    assert run.returncode == 0, run.output[-2000:]
    assert "partial_backend:BACKEND (partial_backend:BACKEND) version=partial-0" in run.output
    assert "capabilities: unpad_data\n" in run.output


class _OptionNames:
    """A stand-in for pytest's parser and option group that records the option names added."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def getgroup(self, name: str, description: str = "") -> _OptionNames:
        return self

    def addoption(self, *names: str, **kwargs) -> None:
        self.names.extend(names)


def test_batchspec_help_and_version_need_no_backend(tmp_path):
    """``batchspec --help`` lists every option of the suite, ``--version`` names the suite's
    version and the SPEC version it checks; both exit 0 without ``--backend``."""
    options = _OptionNames()
    pytest_addoption(options)
    assert "--expectations" in options.names and "--conformance-report" in options.names
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run(
        [sys.executable, "-m", "batchspec", "--help"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "--backend is required" not in done.stdout + done.stderr
    missing = [name for name in options.names if name not in done.stdout]
    assert not missing, f"batchspec --help does not list {missing}"
    done = subprocess.run(
        [sys.executable, "-m", "batchspec", "--version"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    first, second = done.stdout.splitlines()[:2]
    assert suite_version() in first and f"SPEC {spec_version()}" in first and first.startswith("batchspec ")
    assert second == f"pytest {pytest.__version__}"


def test_an_entry_point_backend_from_an_installed_package_is_found_by_name(tmp_path):
    """A throwaway package registers ``thirdparty`` in the ``batchspec.backends`` entry-point
    group; built and installed with pip into a target folder, it is found by that name."""
    source = tmp_path / "src"
    (source / "thirdparty_batchspec").mkdir(parents=True)
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "thirdparty-batchspec"\nversion = "9.9"\n\n'
        '[project.entry-points."batchspec.backends"]\nthirdparty = "thirdparty_batchspec:BACKEND"\n',
        encoding="utf-8",
    )
    (source / "thirdparty_batchspec" / "__init__.py").write_text(
        "from types import SimpleNamespace\n\nfrom batchspec import reference\n\n"
        "BACKEND = SimpleNamespace(get_unpad_data=reference.get_unpad_data, __version__='9.9',\n"
        "                          BATCHSPEC_SPEC_VERSION='1.0', BATCHSPEC_CAPABILITIES=['unpad_data'])\n",
        encoding="utf-8",
    )
    site = tmp_path / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    listing = run_conformance(tmp_path / "list", "conformance/test_goldens.py", "--list-backends", env=env)
    assert "thirdparty (thirdparty_batchspec:BACKEND) version=9.9" in listing.output, listing.output[-2000:]
    run = run_conformance(
        tmp_path / "run", "conformance/test_goldens.py", "-k", "unpad", "--backend=thirdparty", env=env
    )
    assert run.returncode == 0, run.output[-3000:]
    assert "backend=thirdparty version=9.9" in run.output
    assert run.report["clauses"]["unpad-indexed"]["status"] == "pass"
