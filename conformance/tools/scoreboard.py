"""``python -m batchspec.conformance.tools.scoreboard REPORT.json ... [--out FILE]``: several
backends' conformance reports (``--conformance-report=DIR`` writes ``DIR/report.json``) as one
clause x backend table in Markdown, with each backend's verdict (``conformance/run/verdict.py``), rendered by
``conformance/run/report.py`` (``render_scoreboard``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from batchspec.conformance.run.report import render_scoreboard

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m batchspec.conformance.tools.scoreboard", description=__doc__.splitlines()[0]
    )
    parser.add_argument("reports", nargs="+", type=Path, help="report.json files, one per backend run")
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown here (default: print it)")
    args = parser.parse_args(argv)
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in args.reports]
    text = render_scoreboard(reports)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
