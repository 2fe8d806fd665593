"""docs/upstream.md's results of upstream through the suite, generated from a conformance run of ``automodel``.

``python -m batchspec.automodel_results REPORT.json [--write docs/upstream.md | --check docs/upstream.md]``

``REPORT.json`` is the ``report.json`` that ``pytest conformance --backend=automodel
--conformance-report=DIR`` writes. The text (a summary line with the status counts, one table
row per clause the run judged, the clauses not supported and those not run) goes between the
markers ``<!-- automodel-results -->`` and ``<!-- /automodel-results -->``; a ``FAIL`` row
gives the Decision from ``EXPECTED_DIFFERENCES`` (``backends/automodel/__init__.py``), linked to
its anchor in SPEC.md (``../SPEC.md#d-6`` from docs/; the link is relative to the file written).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from batchspec.backends.automodel import EXPECTED_DIFFERENCES
from batchspec.conformance.run.spec import spec_clauses
from batchspec.conformance.run.verdict import STATUSES

__all__ = ["BEGIN", "DOC", "END", "SPEC", "main", "render", "section_of", "unexplained"]

BEGIN = "<!-- automodel-results -->"
END = "<!-- /automodel-results -->"
ROOT = Path(__file__).resolve().parents[1]  # in a checkout
DOC = ROOT / "docs" / "upstream.md"  # where the block lives
SPEC = ROOT / "SPEC.md"


def unexplained(report: Mapping, differences: Mapping[str, tuple[str, str]] = EXPECTED_DIFFERENCES) -> str | None:
    """Why ``report``'s failing clauses are not exactly ``differences``' keys (``None`` when they are)."""
    failing = {c for c, row in report["clauses"].items() if row["status"] == "FAIL"}
    if failing == set(differences):
        return None
    return (
        f"clauses failing with no Decision in EXPECTED_DIFFERENCES: {sorted(failing - set(differences))}; "
        f"EXPECTED_DIFFERENCES entries that do not fail: {sorted(set(differences) - failing)}"
    )


def render(
    report: Mapping, differences: Mapping[str, tuple[str, str]] = EXPECTED_DIFFERENCES, spec: str = "../SPEC.md"
) -> str:
    """The results text, markers included, for ``report`` (a parsed ``report.json``), with links
    to ``spec`` (SPEC.md as the page holding the text reaches it; from docs/ by default).

    Raises:
        ValueError: the report is not of the ``automodel`` backend, or its failing clauses are
            not exactly ``differences``' keys (a failure the page would not explain).
    """
    backend = report["backend"]
    if backend["name"] != "automodel":
        raise ValueError(f"the report is of backend {backend['name']!r}, not 'automodel'")
    problem = unexplained(report, differences)
    if problem:
        raise ValueError(problem)
    clauses = report["clauses"]
    known = spec_clauses()
    not_run = sorted(c for c in known if c not in clauses)
    counts = {s: sum(row["status"] == s for row in clauses.values()) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    suite = report["suite"]
    lines = [
        BEGIN,
        f"batchspec {suite['version']} (SPEC {suite['spec_version']}), backend `automodel` "
        f"{backend['version']} (capabilities: {', '.join(backend['capabilities'])}), verdict "
        f"**{report['verdict']['result']}**. Of SPEC's {len(known)} clauses: {summary}"
        + (f", {len(not_run)} not run." if not_run else "."),
        "",
        "| clause | level | status | note |",
        "|---|---|---|---|",
    ]
    unsupported = []
    for clause in sorted(clauses):
        row = clauses[clause]
        if row["status"] == "not supported":
            unsupported.append(clause)
            continue
        why = ""
        if clause in differences:
            decision, what = differences[clause]
            why = f"[{decision}]({spec}#{decision.lower()}): {what}"
        elif row["status"] == "partial" and all(t["outcome"] in ("passed", "not supported") for t in row["tests"]):
            why = "(passes; its other tests need a profile not declared)"
        lines.append(f"| [{clause}]({spec}#{clause}) | {row['level']} | {row['status']} | {why} |")
    lines.append("")
    if unsupported:
        lines.append(
            f"Not supported ({len(unsupported)}; their profiles are not declared): "
            + ", ".join(f"`{c}`" for c in unsupported)
            + "."
        )
    if not_run:
        lines.append("")
        lines.append(
            f"Not run ({len(not_run)}; no test of the run cites them, `conformance/test_checkpoint_ranks.py` is left out): "
            + ", ".join(f"`{c}`" for c in not_run)
            + "."
        )
    lines.append(END)
    return "\n".join(lines) + "\n"


def section_of(text: str) -> str:
    """The results text (markers included) in ``text``, e.g. docs/upstream.md's.

    Raises:
        ValueError: ``text`` has no ``BEGIN`` … ``END`` block.
    """
    match = re.search(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n", text, re.S)
    if match is None:
        raise ValueError(f"no {BEGIN} ... {END} block")
    return match.group(0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m batchspec.automodel_results", description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="report.json of a `pytest conformance --backend=automodel` run")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", type=Path, metavar="PAGE", help="replace the results block in this file")
    group.add_argument("--check", type=Path, metavar="PAGE", help="exit 1 when this file's block differs")
    args = parser.parse_args(argv)
    target = args.write or args.check
    spec = os.path.relpath(SPEC, (target or DOC).resolve().parent)
    text = render(json.loads(args.report.read_text(encoding="utf-8")), spec=Path(spec).as_posix())
    if target is None:
        sys.stdout.write(text)
        return 0
    current = target.read_text(encoding="utf-8")
    old = section_of(current)
    if args.check:
        if old != text:
            sys.stderr.write(f"{target}: the automodel results differ from {args.report}; rerun with --write\n")
            return 1
        return 0
    target.write_text(current.replace(old, text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
