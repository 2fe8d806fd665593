"""Run the conformance suite against the mutants of ``tests/mutants/`` and print the kill table.

    .venv/bin/python tests/mutants/sweep.py [-j 2] [--sample N] [--out FILE] [m_name ...]

Each mutant (``m_*.py``: the reference with one bug; its docstring's first line ends with
``Breaks: [clause], ...``) runs ``pytest conformance --backend=m_name:BACKEND`` in its own
process (the multi-rank scenarios aside: their loader is the reference's), with a conformance
report, its tests in one pytest-xdist worker under ``--dist=loadgroup`` as the ``batchspec``
command runs them: a mutant that crashes the process (a kernel mutant's out-of-bounds atomic
add, ``mt_*``) fails the test it crashed in, blamed on every clause the test cites, and the run
goes on to its report. A run that still ends without a report (or refuses the mutant) is not
a kill: its row says why (``NO: ...``). A mutant is *killed* when the verdict is ``fail``; its *blame is right* when every clause
the failures are blamed on is one its docstring declares. Each failing test is a *kill*; a kill
is *precise* when its blamed set lies within the declared clauses (the table's "precise kills",
and the blame precision over all kills); a kill by a crash is counted in the killed cell and
left out of the blame columns (a dead process is blamed on every clause its test cites). The exit status is 1 unless every
mutant run is killed with the right blame. ``--sample N`` runs N mutants chosen by the date (a
different slice each day, the whole set over a few days): what CI runs (``tests/runs/test_mutants.py``).
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BREAKS = re.compile(r"Breaks: ((?:\[[a-z0-9-]+\](?:, )?)+)\s*$")


def declared(path: Path) -> tuple[str, tuple[str, ...]]:
    """A mutant's docstring summary and the clauses it declares, read without importing it.

    The summary is the docstring's first paragraph, read as one line, so a long clause list may
    go on over the next lines (each at most 140 characters).

    Raises:
        ValueError: the module has no docstring whose first paragraph ends with ``Breaks: [...]``.
    """
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(line.strip() for line in doc.strip().split("\n\n")[0].splitlines())
    match = BREAKS.search(first)
    if match is None:
        raise ValueError(f"{path.name}: the docstring's first paragraph must end with 'Breaks: [clause], ...'")
    return first[: match.start()].strip(), tuple(re.findall(r"\[([a-z0-9-]+)\]", match.group(1)))


def mutants() -> dict[str, Path]:
    """Every mutant module of the reference, by name (the default set and the daily sample)."""
    return {path.stem: path for path in sorted(HERE.glob("m_*.py"))}


def kernel_mutants() -> dict[str, Path]:
    """The triton backend's kernel mutants (``mt_*``, issue 33), by name: run by name only, under
    ``TRITON_INTERPRET=1`` on CPU; slow (the interpreter), so never in the default set or sample."""
    return {path.stem: path for path in sorted(HERE.glob("mt_*.py"))}


def sample(names: list[str], count: int, day: datetime.date | None = None) -> list[str]:
    """``count`` of ``names``, a different consecutive slice each day."""
    if count >= len(names):
        return names
    start = ((day or datetime.date.today()).toordinal() * count) % len(names)
    return [names[(start + i) % len(names)] for i in range(count)]


def run_mutant(name: str, workdir: Path) -> dict:
    """Run the suite against one mutant; its row of the kill table."""
    summary, clauses = declared({**mutants(), **kernel_mutants()}[name])
    report_dir = workdir / name
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        # no shrinking: the verdict and the blame of the first failing example are what a sweep reads
        BATCHSPEC_HYPOTHESIS_PROFILE=os.environ.get("BATCHSPEC_HYPOTHESIS_PROFILE", "batchspec-sweep"),
        # one torch thread per run unless told otherwise: the runs (-j) share the cores
        OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
    )
    command = [
        sys.executable,
        "-m",
        "pytest",
        "conformance",
        f"--backend={name}:BACKEND",
        "--ignore=conformance/test_checkpoint_ranks.py",
        "-p",
        "no:cacheprovider",
        "-q",
        # the batchspec command's distribution: a crash fails its own test and the run goes on
        # (conformance/run/scheduling.py); in-process, a segfault ended the run with no report at all
        "-n",
        "1",
        "--dist",
        "loadgroup",
        f"--conformance-report={report_dir}",
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    path = report_dir / "report.json"
    if not path.exists():
        error = f"the run ended with exit status {done.returncode} and no report: {(done.stdout + done.stderr)[-2000:]}"
        return {"mutant": name, "summary": summary, "declared": clauses, "killed": False, "error": error}
    report = json.loads(path.read_text(encoding="utf-8"))
    if report["verdict"]["result"] == "error":  # the mutant was refused, or the run could not start: nothing ran
        error = "; ".join(report["verdict"]["errors"])
        return {"mutant": name, "summary": summary, "declared": clauses, "killed": False, "error": error}
    failures = report["failures"]
    # a test whose process died is blamed on every clause it cites (conformance/run/recorder.py): nothing
    # tells which one the crash broke, so its blame is left out of the blame columns and precision
    crashed = [f for f in failures if f["message"].startswith("the test's process died")]
    attributed = [f for f in failures if f not in crashed]
    blamed = sorted({c for f in attributed for c in f["clauses"]})
    # a kill is precise when its blamed set lies within the declared one (not merely meets it)
    precise = sum(bool(f["clauses"]) and set(f["clauses"]) <= set(clauses) for f in attributed)
    # the routes of the model checks (conformance/model/) that fail: test ids are <route>-<attention>
    model = sorted(
        {
            f["nodeid"].split("[", 1)[1].rstrip("]").rsplit("-", 1)[0]
            for f in failures
            if f["nodeid"].startswith("conformance/model/") and "[" in f["nodeid"]
        }
    )
    return {
        "mutant": name,
        "summary": summary,
        "declared": clauses,
        "killed": report["verdict"]["result"] == "fail",
        "failed_tests": len(failures),
        "crashed_tests": len(crashed),
        "precise_kills": precise,
        "first_kill": failures[0]["nodeid"] if failures else None,
        "blamed": blamed,
        "wrong_blame": sorted(set(blamed) - set(clauses)),
        "suite_errors": report["verdict"]["suite_errors"],
        "model_routes": model,
    }


def ok(row: dict) -> bool:
    """Killed, with every blamed clause among the declared ones (and some kill not a crash, so
    that there is a blame to judge)."""
    attributed = row.get("failed_tests", 0) - row.get("crashed_tests", 0)
    return row["killed"] and attributed > 0 and not row.get("wrong_blame") and not row.get("suite_errors")


def _one_line(error: str, limit: int = 160) -> str:
    """An error's first line, cut to ``limit`` characters, safe in a Markdown table cell."""
    line = error.strip().splitlines()[0] if error.strip() else "no output"
    return (line[: limit - 3] + "..." if len(line) > limit else line).replace("|", "\\|")


def kill_table(rows: list[dict]) -> str:
    """The kill table in Markdown, with the count of mutants killed and the blame accuracy."""
    lines = [
        "| mutant | bug | declares | killed | failed tests | precise kills | first killing test | blamed | wrong blame "
        "| model check kills on |",
        "|---|---|---|---|---:|---:|---|---|---|---|",
    ]
    for row in rows:
        killed = "yes" if row["killed"] else "NO"
        if row.get("crashed_tests"):
            killed += f" ({row['crashed_tests']} by a crash)"
        if row.get("error"):
            killed += f": {_one_line(row['error'])}"
        lines.append(
            f"| {row['mutant']} | {row['summary']} | {', '.join(row['declared'])} | {killed} "
            f"| {row.get('failed_tests', 0)} "
            f"| {row.get('precise_kills', 0)}/{row.get('failed_tests', 0) - row.get('crashed_tests', 0)} "
            f"| {row.get('first_kill') or ''} | {', '.join(row.get('blamed', []))} "
            f"| {', '.join(row.get('wrong_blame', []))} | {', '.join(row.get('model_routes', [])) or '-'} |"
        )
    killed = sum(row["killed"] for row in rows)
    right = sum(ok(row) for row in rows)
    kills = sum(row.get("failed_tests", 0) - row.get("crashed_tests", 0) for row in rows)
    crashes = sum(row.get("crashed_tests", 0) for row in rows)
    precise = sum(row.get("precise_kills", 0) for row in rows)
    lines.append("")
    by_model = sum(bool(row.get("model_routes")) for row in rows)
    crashed = f"; {crashes} kills by a crash left out: blamed on every cited clause" if crashes else ""
    lines.append(
        f"{killed}/{len(rows)} mutants killed; {right}/{len(rows)} killed with every blamed clause declared; "
        f"blame precision {precise}/{kills} kills ({100 * precise / max(kills, 1):.0f}%: blamed set within the "
        f"mutant's declared clauses{crashed}); {by_model}/{len(rows)} killed by the model checks too."
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--sample", type=int, default=None, help="run this many mutants, a different slice each day")
    parser.add_argument("--out", type=Path, default=None, help="also write the kill table (Markdown) here")
    args = parser.parse_args(argv)
    names = args.names or list(mutants())
    unknown = sorted(set(names) - set(mutants()) - set(kernel_mutants()))
    if unknown:
        parser.error(f"unknown mutant(s) {unknown}; known: {sorted(mutants())}")
    if args.sample is not None:
        names = sample(names, args.sample)
    with tempfile.TemporaryDirectory(prefix="batchspec-mutants-") as workdir:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            rows = list(pool.map(lambda name: run_mutant(name, Path(workdir)), names))
    table = kill_table(rows)
    sys.stdout.write(table)
    for row in rows:
        if row.get("error"):
            sys.stderr.write(f"{row['mutant']}: not run to a verdict: {row['error']}\n")
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")
    return 0 if all(ok(row) for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
