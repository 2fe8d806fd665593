"""From test results to clause statuses, the release verdict and the run's report, as data
(``build_report``; report.json and report.md are rendered from it by conformance/run/report.py).

The plugin turns every test's result into a *record* (``conformance/run/result_records.py``; a plain
dict, so it survives pytest-xdist's transport from the worker processes):

- ``nodeid``; ``cited``: the clause ids the test cites;
- ``outcome``: ``passed``, ``failed``, ``expected failure``, ``unexpected pass``,
  ``not supported``, ``skipped`` or ``suite error``;
- ``blamed``: the clauses a failure is blamed on (the ``ClauseFailure``'s clauses, the clause
  listing a contract function's faults when it raised on a valid input, else every cited
  clause); ``blame``: how, a list of ``conformance.run.failure_blame.BLAME_KINDS``; ``expectation``: the
  index of the ``--expectations`` entry that matched;
- ``message``, ``reproduce`` (a command that reruns the test alone) and ``hypothesis`` (the
  ``@reproduce_failure`` line of a property test's failure, when it printed one).

Clause statuses: ``FAIL`` (a test failed on it), ``expected failure`` (its failures are all
expected), ``unexpected pass`` (an expectation names it or one of its tests, and they pass),
``pass`` (every citing test passed), ``partial`` (some passed, the others were not supported
or stopped on another clause), ``inconclusive`` (every citing test failed on another clause,
or the suite itself failed), ``not supported``.

The verdict (``build_report(...)["verdict"]``) is ``error`` when the run could not judge the
backend at all (``errors`` says why), with pytest's exit status: 4 when the backend was refused
(no ``BATCHSPEC_SPEC_VERSION``, another major SPEC version, an import failure) or an option was
wrong (a usage error), 5 when no test was selected, 3 on an internal error. Else it is ``fail``,
exit status 1, when a MUST clause has status ``FAIL``, when the suite itself failed (a suite
error: no clause can be judged), or, under ``--strict-expectations``, when an expectation
passed; else ``incomplete`` when the run stopped early (``-x``, Ctrl-C, SIGTERM: exit status
2) or when a ``--release`` run left a MUST clause of a declared profile unchecked (a subset
run: exit status 1); else ``pass``, exit status 0. SHOULD failures are warnings;
``unchecked_must_clauses`` lists the declared MUST clauses no test checked. The verdict holds
no time, path or order of execution, so two runs of one backend at one suite version give the
same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

import pytest

from batchspec.conformance.run.expectations import Expectation, matches

__all__ = [
    "OUTCOMES",
    "RESULTS",
    "STATUSES",
    "bounded",
    "build_report",
    "clause_outcomes",
    "skips",
]

OUTCOMES = ("passed", "failed", "expected failure", "unexpected pass", "not supported", "skipped", "suite error")
STATUSES = ("FAIL", "expected failure", "unexpected pass", "pass", "partial", "inconclusive", "not supported")
RESULTS = ("error", "fail", "incomplete", "pass")  # the verdict's ``result``
# the verdict's reasons name this many left-out tests (``verdict["left_out"]`` has them all)
LEFT_OUT_SHOWN = 10
# report.json's ``verdict["left_out"]["tests"]`` lists this many (its ``count`` says how many in all)
LEFT_OUT_LISTED = 200


class _ClauseRow(TypedDict):
    """One row of the report's ``clauses`` table (``build_report``)."""

    level: str  # MUST, SHOULD, or "?" for a clause SPEC.md does not list
    status: str  # one of STATUSES
    tests: list[dict[str, str]]  # {"nodeid", "outcome"} of each citing test, sorted


def clause_outcomes(records: Iterable[Mapping]) -> dict[str, list[tuple[str, str]]]:
    """Clause id -> ``(nodeid, outcome for this clause)`` of every test that cites it or is
    blamed on it. A failure counts as ``failed`` (or ``expected failure``) for the clauses it is
    blamed on and ``inconclusive`` for the test's other clauses; a suite error is
    ``inconclusive`` for all of them."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for record in records:
        outcome, blamed = record["outcome"], set(record.get("blamed") or ())
        for clause in list(dict.fromkeys([*record["cited"], *sorted(blamed - set(record["cited"]))])):
            if outcome in ("failed", "expected failure"):
                per_clause = outcome if clause in blamed else "inconclusive"
            elif outcome == "suite error":
                per_clause = "inconclusive"
            else:
                per_clause = outcome
            out[clause].append((record["nodeid"], per_clause))
    return dict(out)


def _status(outcomes: list[tuple[str, str]], expected_clause: bool) -> str:
    counts: defaultdict[str, int] = defaultdict(int)
    for _, outcome in outcomes:
        counts[outcome] += 1
    if counts["failed"]:
        return "FAIL"
    if counts["expected failure"]:
        return "expected failure"
    if counts["unexpected pass"] or (expected_clause and counts["passed"]):
        return "unexpected pass"
    passed = counts["passed"]
    # a test skipped for a reason of the run (a launcher not selected) takes nothing from a pass
    if passed and not (counts["not supported"] or counts["inconclusive"]):
        return "pass"
    if passed:
        return "partial"
    if counts["inconclusive"]:
        return "inconclusive"
    return "not supported"


def _stale(expectations: list[Expectation], records: Sequence[Mapping]) -> list[dict]:
    nodeids = [r["nodeid"] for r in records]
    clauses = {c for r in records for c in (*r["cited"], *(r.get("blamed") or ()))}
    stale = []
    for entry in expectations:
        if entry.test is not None and not any(matches(n, entry.test) for n in nodeids):
            stale.append(entry.as_dict())
        elif entry.clause is not None and entry.clause not in clauses:
            stale.append(entry.as_dict())
    return stale


def build_report(
    records: Sequence[Mapping],
    *,
    levels: Mapping[str, str],
    expectations: list[Expectation],
    strict_expectations: bool,
    header: Mapping,
    declared_clauses: Iterable[str] = (),
    interrupted: str | None = None,
    release: bool = False,
    error: str | None = None,
    error_status: int = pytest.ExitCode.USAGE_ERROR,
    collection_errors: Sequence[Mapping[str, str]] = (),
    left_out: Sequence[str] = (),
    limited_to: Sequence[str] = (),
    never_ran: Sequence[str] = (),
) -> dict:
    """The run's report: ``header`` (suite, SPEC, backend, environment, run options), the
    ``verdict``, the per-clause ``clauses`` table, every ``failures`` entry with its reproduce
    command, and the MUST / SHOULD clauses no test of the run checked.

    ``declared_clauses``: the clauses of the profiles the backend declares; ``interrupted``:
    why the run stopped early (``-x``, Ctrl-C, SIGTERM), else None; ``release``: a ``--release``
    run, which must check every MUST clause of the declared profiles; ``error``: why the run
    could not judge the backend (a refused backend, a usage error, no test selected), else None:
    the verdict is then ``error`` with exit status ``error_status`` (pytest's), whatever the
    records say. ``collection_errors``: ``{"nodeid", "message"}`` of each part of the suite that
    could not be collected (a tampered golden, a module that fails to import): the run is
    ``incomplete`` (exit status 2) unless it failed. ``left_out``: the test ids the run's selection
    left out (``-k``, ``-m``, ``--deselect``, a subset of paths): a ``--release`` run that left
    any out is ``incomplete`` (exit status 1); any run counts them (``verdict["left_out"]``, listing the first ``LEFT_OUT_LISTED``).
    ``limited_to``: the run's test paths when they are not the whole suite: a ``--release`` run so
    limited is ``incomplete`` too. ``never_ran``: the collected tests of a stopped run without a
    result (``--run-timeout``, Ctrl-C, pytest-xdist's limit of crashed workers), named in its reasons.
    ``header["backend"]`` needs ``name``, ``version``, ``capabilities`` and ``spec_version``
    (``unknown`` ones for a backend that was not loaded).

    Raises:
        KeyError: a record, or ``header``, without a field named above."""
    records = sorted(records, key=lambda r: r["nodeid"])
    clauses = _clause_rows(records, levels, expectations)
    suite_errors = sorted(r["nodeid"] for r in records if r["outcome"] == "suite error")
    unexpected = _unexpected_passes(records, clauses, expectations)
    must_failures = _failing(clauses, "MUST")
    failed = bool(must_failures or suite_errors or (strict_expectations and unexpected))
    unchecked = sorted(c for c in set(declared_clauses) if levels.get(c) == "MUST" and c not in clauses)
    never_ran, left_out = sorted(never_ran), sorted(left_out)
    incomplete = _incomplete_reasons(
        interrupted, never_ran, collection_errors, left_out, limited_to, release, unchecked
    )
    stopped = bool(interrupted or collection_errors or never_ran)
    result, exit_status = _result(error, int(error_status), failed, bool(incomplete), stopped)
    verdict = {
        "result": result,
        "exit_status": exit_status,
        "errors": [error] if error is not None else [],
        "incomplete": incomplete,
        "unchecked_must_clauses": unchecked,
        "collection_errors": [dict(problem) for problem in collection_errors],
        **_not_run(left_out, limited_to, never_ran),
        **_suite_and_backend(header),
        "must_failures": must_failures,
        "should_failures": _failing(clauses, "SHOULD"),
        "suite_errors": suite_errors,
        "expected_failures": _expected_failures(records),
        "unexpected_passes": unexpected,
        "stale_expectations": _stale(expectations, records),
        "strict_expectations": strict_expectations,
        "expectations": [e.as_dict() for e in expectations],
        "clause_statuses": {c: row["status"] for c, row in clauses.items()},
        "skips": skips(records),
    }
    return {
        **header,
        "verdict": verdict,
        "clauses": clauses,
        "failures": _failure_entries(records),
        "untested_must_clauses": sorted(c for c, level in levels.items() if level == "MUST" and c not in clauses),
        "untested_should_clauses": sorted(c for c, level in levels.items() if level == "SHOULD" and c not in clauses),
    }


def _unexpected_passes(
    records: Sequence[Mapping], clauses: Mapping[str, _ClauseRow], expectations: list[Expectation]
) -> list[dict]:
    """The expectations that did not hold: each test entry that passed (by node id), then each clause entry whose clause passed."""
    expected_clauses = {e.clause for e in expectations if e.clause is not None}
    return sorted(
        [{"nodeid": r["nodeid"], "entry": r["expectation"]} for r in records if r["outcome"] == "unexpected pass"],
        key=lambda u: u["nodeid"],
    ) + [
        {"clause": c, "entry": next(e.index for e in expectations if e.clause == c)}
        for c, row in clauses.items()
        if row["status"] == "unexpected pass" and c in expected_clauses
    ]


def _expected_failures(records: Sequence[Mapping]) -> list[dict]:
    """Each expected failure's test, the clauses it blamed and its expectation entry."""
    return [
        {"nodeid": r["nodeid"], "clauses": sorted(r.get("blamed") or ()), "entry": r["expectation"]}
        for r in records
        if r["outcome"] == "expected failure"
    ]


def _not_run(left_out: list[str], limited_to: Sequence[str], never_ran: list[str]) -> dict:
    """The verdict's counts of what the run left out (its selection, its paths) and never ran."""
    return {
        "left_out": {"count": len(left_out), "tests": left_out[:LEFT_OUT_LISTED]},
        "limited_to": sorted(limited_to),
        "never_ran": {"count": len(never_ran), "tests": never_ran[:LEFT_OUT_LISTED]},
    }


def _result(error: str | None, error_status: int, failed: bool, incomplete: bool, stopped: bool) -> tuple[str, int]:
    """``(verdict, exit status)``: an error first, then a failure, then an incomplete run (exit status 2 when it
    ``stopped``: interrupted, a collection error or tests that never ran; else 1), else a pass."""
    if error is not None:
        return "error", error_status
    if failed:
        return "fail", 1
    if incomplete:
        return "incomplete", 2 if stopped else 1
    return "pass", 0


def _suite_and_backend(header: Mapping) -> dict:
    """The verdict's copy of the header's suite versions and backend identity."""
    return {
        "suite_version": header["suite"]["version"],
        "spec_version": header["suite"]["spec_version"],
        "golden_index_sha256": header["suite"]["golden_index_sha256"],
        "backend": {k: header["backend"][k] for k in ("name", "version", "capabilities", "spec_version")},
    }


def _clause_rows(
    records: Sequence[Mapping], levels: Mapping[str, str], expectations: list[Expectation]
) -> dict[str, _ClauseRow]:
    """The report's per-clause table, by clause id (sorted): level, status and each test's outcome."""
    per_clause = clause_outcomes(records)
    expected_clauses = {e.clause for e in expectations if e.clause is not None}
    clauses: dict[str, _ClauseRow] = {}
    for clause in sorted(per_clause):
        clauses[clause] = {
            "level": levels.get(clause, "?"),
            "status": _status(per_clause[clause], clause in expected_clauses),
            "tests": [{"nodeid": n, "outcome": o} for n, o in sorted(per_clause[clause])],
        }
    return clauses


def _failing(clauses: Mapping[str, _ClauseRow], level: str, status: str = "FAIL") -> dict[str, list[str]]:
    """The clauses of ``level`` with ``status``, each with its tests of that outcome."""
    wanted = "failed" if status == "FAIL" else status
    return {
        c: sorted({t["nodeid"] for t in row["tests"] if t["outcome"] == wanted})
        for c, row in clauses.items()
        if row["level"] == level and row["status"] == status
    }


def _incomplete_reasons(
    interrupted: str | None,
    never_ran: list[str],
    collection_errors: Sequence[Mapping[str, str]],
    left_out: list[str],
    limited_to: Sequence[str],
    release: bool,
    unchecked: list[str],
) -> list[str]:
    """Why the run cannot pass though nothing failed (``verdict["incomplete"]``), in report order."""
    incomplete = [f"the run stopped early ({interrupted})"] if interrupted else []
    if never_ran:
        incomplete.append(f"{len(never_ran)} test(s) never ran or never finished: {bounded(never_ran)}")
    for problem in collection_errors:
        incomplete.append(f"not collected: {problem['nodeid'] or 'the suite'}: {problem['message']}")
    if release and left_out:
        incomplete.append(
            f"a release run must run every test of the declared profiles; {len(left_out)} were left out "
            f"(-k, -m or --deselect): {bounded(left_out)}"
        )
    if release and limited_to:
        incomplete.append(
            f"a release run must run the whole suite; this one was limited to {bounded(sorted(limited_to))}"
        )
    if release and unchecked:
        incomplete.append(
            f"a release run must check every MUST clause of the declared profiles; {len(unchecked)} were not"
        )
    return incomplete


def _failure_entries(records: Sequence[Mapping]) -> list[dict]:
    """The report's ``failures``: each failed, suite-error, expected-failure or unexpected-pass record."""
    return [
        {
            "nodeid": r["nodeid"],
            "outcome": r["outcome"],
            "clauses": sorted(r.get("blamed") or ()),
            "blame": r.get("blame", []),  # how: conformance/run/failure_blame.py, BLAME_KINDS
            "message": r.get("message", ""),
            "reproduce": r.get("reproduce", ""),
            **({"hypothesis": r["hypothesis"]} if r.get("hypothesis") else {}),
        }
        for r in records
        if r["outcome"] in ("failed", "suite error", "expected failure", "unexpected pass")
    ]


def bounded(nodeids: Sequence[str], total: int | None = None) -> str:
    """The first ``LEFT_OUT_SHOWN`` of ``nodeids``, comma-separated, and how many more of ``total``
    (default: ``len(nodeids)``): the verdict's reasons and report.md name left-out tests so."""
    total = len(nodeids) if total is None else total
    shown = ", ".join(nodeids[:LEFT_OUT_SHOWN])
    return shown + (f", and {total - min(len(nodeids), LEFT_OUT_SHOWN)} more" if total > LEFT_OUT_SHOWN else "")


def skips(records: Iterable[Mapping]) -> list[dict]:
    """The run's skipped and not-supported tests, grouped by reason: ``outcome``, ``reason``,
    ``fix`` (what makes them run; None when the skip named none), ``count`` and ``tests``.

    A skip never changes the verdict by itself: a ``--release`` run whose skips leave a declared
    MUST clause unchecked is ``incomplete`` (``unchecked_must_clauses``); one whose skipped
    tests' clauses were all checked by other tests (the multi-rank scenarios under one launcher,
    without ``mpiexec``) is ``pass``, and these groups say what did not run and why."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for record in records:
        if record["outcome"] in ("skipped", "not supported"):
            key = (record["outcome"], record.get("reason") or "no reason given", record.get("fix"))
            groups[key].append(record["nodeid"])
    return [
        {"outcome": outcome, "reason": reason, "fix": fix, "count": len(tests), "tests": sorted(tests)}
        for (outcome, reason, fix), tests in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1]))
    ]
