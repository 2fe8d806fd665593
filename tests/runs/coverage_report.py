"""Line and branch coverage of ``reference/`` under the conformance run, with every uncovered
branch explained (issue 15, item 4); writes ``docs/coverage.md``.

    .venv/bin/python tests/runs/coverage_report.py [--data FILE] [--out docs/coverage.md]

It runs, in a subprocess, ``python -m coverage run --branch --source=<the installed
batchspec/reference package> -m pytest conformance --backend=reference -p no:cacheprovider -q
--ignore=conformance/test_checkpoint_ranks.py``. The multi-rank scenarios are left out: their rank
processes (mpiexec) import the reference on their own, outside this process, so coverage would
not see them, and what they reach is explained below instead. ``--data FILE`` reads an existing
coverage data file instead of running the suite (about six minutes under coverage).

An *uncovered item* is a branch arc not taken from a line that ran (``missing_branches``; the
missed lines it leads into are its block), or a missed line no such arc leads into (a body that
never runs). ``EXPLANATIONS`` below is the one home of the reasons: one entry per item, keyed by
``module:function:<code of the line>`` plus ``-> <code of the destination>`` for an arc, so a
line shift does not lose an explanation. The script exits 1, writing nothing, when an item has
no explanation or an explanation matches no item (the keys are printed, ready to paste).
"""

from __future__ import annotations

import argparse
import ast
import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import coverage

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "coverage.md"
KEY = 48  # characters of code per part of a key: enough to tell lines apart, short enough to survive edits

# Why the conformance run never takes each uncovered item. The categories (first word):
CATEGORIES = {
    "unreachable": "unreachable defensive code: no input the callers can build reaches it",
    "out-of-contract": "reached only by input outside the contract, which SPEC leaves unchecked",
    "cuda": "reached only when tensors live off the CPU (--device=cuda)",
    "multirank": "reached only by the multi-rank scenarios (conformance/test_checkpoint_ranks.py)",
    "gap": "a real gap in the suite: SPEC requires the behaviour and no check exercises it",
}
# key -> (category, why the conformance run never takes it).
EXPLANATIONS: dict[str, tuple[str, str]] = {
    # attention.py
    # checkpoint.py
    'checkpoint.py:encode_state:if not isinstance(state, dict): -> raise TypeError(f"state must be the dict pipe...': (
        "unreachable",
        "`encode_state` is the reference's own helper (not in SPEC's API); its one caller, `state_dict`, "
        "passes what Zephon's `checkpoint()` returns, always a dict.",
    ),
    'checkpoint.py:encode_state:if not isinstance(fingerprint, str): -> raise TypeError(f"fingerprint must be a str,...': (
        "unreachable",
        "Its one caller passes `pipeline_fingerprint`'s hex string.",
    ),
    "checkpoint.py:encode_state:if not (_is_int(value) and value >= 1): -> raise "
    'ValueError(f"topology[{key!r}] must be...': (
        "unreachable",
        "Its one caller passes `pipeline_topology`, whose three values are Zephon's validated options "
        "defaulted (`or`) to ints >= 1.",
    ),
    "checkpoint.py:decode_state:if not isinstance(data, (bytes, bytearray)): -> raise "
    'TypeError(f"state bytes must be bytes,...': (
        "unreachable",
        "Its one caller, `load_state_dict`, raises `TypeError` for a `state['zephon']` that is not bytes "
        "[state-load-errors] before it decodes anything.",
    ),
    "checkpoint.py:_scalar:if isinstance(value, numbers.Integral): -> if isinstance(value, numbers.Real):": (
        "out-of-contract",
        "A fingerprint setting that is neither None, bool, str nor an integer (a float is written as itself, "
        "anything else as null, [state-fingerprint-canonical]). Zephon 0.2.0's builder signatures type every "
        "listed setting int, str, bool or None, so only an ill-typed builder call (`pack_flat(8.0)`) gets here.",
    ),
    "checkpoint.py:_attribute:except Exception:": (
        "unreachable",
        "Reading a setting or tokenizer attribute that raises: Zephon 0.2.0's ops and the suite's tokenizers "
        "hold plain attributes.",
    ),
    'checkpoint.py:pipeline_description:if nodes is None: -> raise TypeError(f"cannot fingerprint a {type(...': (
        "out-of-contract",
        "Saving or loading state of a pipeline that is not a `zephon.Pipeline` (no `_graph`): sections 10-11 "
        "define state over Zephon pipelines only; the loader-protocol checks that use stand-in pipelines never "
        "ask them for state.",
    ),
    # loader.py
    "loader.py:ZephonDataLoader.state_dict:except RuntimeError as error:": (
        "multirank",
        "[state-collective-timeout]: only a rank whose peer never calls `state_dict()` makes Zephon's collective "
        "checkpoint time out; test_checkpoint_ranks.py's TP-peer timeout scenario does that in rank processes outside "
        "this run. The re-raise of any other `RuntimeError` is defensive: nothing makes `checkpoint()` fail "
        "otherwise.",
    ),
    # output.py
    'output.py:apply_batched_output:elif mask_type == "document_ids": -> raise ValueError( '
    'f"packing_contract.packed_m...': (
        "out-of-contract",
        "An unknown `packed_mask_type` reaching `convert_text_batch` itself: the loader validates the contract "
        "once ([contract-validation], [contract-once]) and `convert_text_batch` does not re-validate "
        "([contract-no-revalidation]); SPEC defines no outcome for an invalid contract passed to it directly.",
    ),
}


def package_dir() -> Path:
    """The installed ``batchspec.reference`` package (``reference/`` in an editable install)."""
    spec = importlib.util.find_spec("batchspec.reference")
    assert spec is not None and spec.submodule_search_locations, "batchspec is not installed: pip install -e ."
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def run_suite(source: Path, data_file: Path) -> tuple[int, str, float]:
    """Run the conformance suite under coverage; (returncode, pytest's summary line, seconds)."""
    command = [
        sys.executable,
        "-m",
        "coverage",
        "run",
        "--branch",
        f"--source={source}",
        f"--data-file={data_file}",
        "-m",
        "pytest",
        "conformance",
        "--backend=reference",
        "-p",
        "no:cacheprovider",
        "-q",
        "--ignore=conformance/test_checkpoint_ranks.py",
    ]
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    summary = lines[-1].strip("= ") if lines else ""
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-4000:] + done.stderr[-2000:])
    return done.returncode, summary, seconds


# --------------------------------------------------------------------------- the code ----


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _code(line: str) -> str:
    """A source line without its trailing comment (one with no quote after its ``#``)."""
    return re.sub(r"\s+#[^\"']*$", "", line)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


@dataclass
class Source:
    """One module: its statements' code and the function each line belongs to."""

    path: Path
    lines: list[str] = field(default_factory=list)
    code: dict[int, str] = field(default_factory=dict)  # statement start line -> its code
    owner: dict[int, str] = field(default_factory=dict)  # line -> qualified function name

    @classmethod
    def read(cls, path: Path) -> Source:
        text = path.read_text(encoding="utf-8")
        source = cls(path, text.splitlines())
        tree = ast.parse(text)
        source._walk(tree, "<module>")
        return source

    def _walk(self, node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = owner
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = child.name if owner == "<module>" else f"{owner}.{child.name}"
                for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    self.owner[line] = inner
            if isinstance(child, ast.stmt):
                self.code.setdefault(child.lineno, self._statement(child))
            self._walk(child, inner)

    def _statement(self, node: ast.stmt) -> str:
        """A simple statement's code; a compound statement's header (up to its body)."""
        end = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            end = body[0].lineno - 1
        return _normalise("\n".join(map(_code, self.lines[node.lineno - 1 : max(end, node.lineno)])))

    def at(self, line: int, limit: int = 72) -> str:
        """The code of the statement at ``line``, cut to ``limit`` characters (keys use 48)."""
        return _cut(self.code.get(line) or _normalise(_code(self.lines[line - 1])), limit)

    def function(self, line: int) -> str:
        return self.owner.get(line, "<module>")


# ------------------------------------------------------------------------ the items ----


@dataclass
class Item:
    """One uncovered branch arc (``source -> target``), or a missed line no arc leads into."""

    module: str
    line: int
    target: int | None  # None: a missed line; negative: the arc leaves the function
    key: str
    code: str
    block: list[int]  # the missed lines the item stands for (the arc's destination block)


def _items(module: str, source: Source, info: dict) -> list[Item]:
    missing = set(info["missing_lines"])
    statements = sorted(set(info["executed_lines"]) | missing)
    order = {line: i for i, line in enumerate(statements)}

    def block_from(start: int) -> list[int]:
        """``start`` and the missed statements after it in the same function, up to one that ran."""
        block = [start]
        for line in statements[order[start] + 1 :]:
            if line not in missing or source.function(line) != source.function(start):
                break
            block.append(line)
        return block

    items: list[Item] = []
    covered: set[int] = set()
    # 1. Arcs not taken from a line that ran, with the missed block each one leads into.
    for line, target in sorted(tuple(arc) for arc in info["missing_branches"]):
        if line in missing:
            continue  # a line that never ran: its arcs belong to its block (2.)
        where = f"{module}:{source.function(line)}:{source.at(line, KEY)}"
        if target < 0:
            key, code, block = f"{where} -> (exit)", f"{source.at(line)} → (leaves the function)", []
        else:
            key = f"{where} -> {source.at(target, KEY)}"
            code = f"{source.at(line)} → {source.at(target)}"
            block = block_from(target) if target in missing else []
        items.append(Item(module, line, target, key, code, block))
        covered.update(block)
    # 2. Missed lines no such arc leads into (an except clause, a body never called): one item
    # per block, which also stands for the arcs from its lines.
    for line in sorted(missing):
        if line in covered:
            continue
        block = block_from(line)
        covered.update(block)
        key = f"{module}:{source.function(line)}:{source.at(line, KEY)}"
        items.append(Item(module, line, None, key, source.at(line), block))
    # Two items with one key (the same code twice in a function): number them in line order.
    seen: dict[str, int] = {}
    for item in items:
        seen[item.key] = seen.get(item.key, 0) + 1
        if seen[item.key] > 1:
            item.key += f" #{seen[item.key]}"
    return sorted(items, key=lambda item: (item.line, item.target or 0))


# ------------------------------------------------------------------------- the report ----


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def _lines(block: list[int]) -> str:
    if not block:
        return ""
    if block == list(range(block[0], block[-1] + 1)) or len(block) > 2:
        return f"{block[0]}" if len(block) == 1 else f"{block[0]}-{block[-1]}"
    return ", ".join(map(str, block))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(rows: list[tuple[str, dict]], items: list[Item], run: str, command: str) -> str:
    head = [
        "# Coverage of `reference/` under the conformance run",
        "",
        "Written by `tests/runs/coverage_report.py` (issue 15, item 4); do not edit by hand. The run:",
        "",
        "```",
        command,
        "```",
        "",
        run,
        "",
        "The multi-rank scenarios (`conformance/test_checkpoint_ranks.py`) are left out: their rank processes "
        "import the reference on their own, outside the measured process. What only they reach is "
        "marked `multirank` below.",
        "",
        "| module | statements | missed lines | branches | partial branches | missed branches | line % | branch % |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    totals = dict.fromkeys(
        ("num_statements", "missing_lines", "num_branches", "num_partial_branches", "missing_branches"), 0
    )
    for module, summary in rows:
        for name in totals:
            totals[name] += summary[name]
        head.append(_row(f"`{module}`", summary))
    head.append(_row("**total**", totals))
    counts = {category: 0 for category in CATEGORIES}
    for item in items:
        counts[EXPLANATIONS[item.key][0]] += 1
    head += [
        "",
        "Partial branches: lines with a branch taken one way only. Missed branches: the arcs not taken "
        "(coverage.py counts both sides of a line that never ran).",
        "",
        "## Uncovered branches, explained",
        "",
        f"{len(items)} items: each branch arc not taken from a line that ran (with the missed lines "
        "it leads into), and each missed line no such arc leads into. The reasons live in "
        "`EXPLANATIONS` in `tests/runs/coverage_report.py`.",
        "",
        "| category | meaning | items |",
        "|---|---|---:|",
    ]
    head += [f"| `{name}` | {meaning} | {counts[name]} |" for name, meaning in CATEGORIES.items()]
    head += ["", "| where | code | missed lines | category | why the conformance run never takes it |"]
    head.append("|---|---|---|---|---|")
    for item in items:
        category, reason = EXPLANATIONS[item.key]
        arrow = "" if item.target is None else "→exit" if item.target < 0 else f"→{item.target}"
        where = f"`{item.module}:{item.line}{arrow}`"
        head.append(f"| {where} | `{_cell(item.code)}` | {_lines(item.block)} | `{category}` | {_cell(reason)} |")
    return "\n".join(head) + "\n"


def _row(name: str, summary: dict) -> str:
    statements, missed = summary["num_statements"], summary["missing_lines"]
    branches, missed_branches = summary["num_branches"], summary["missing_branches"]
    return (
        f"| {name} | {statements} | {missed} | {branches} | {summary['num_partial_branches']} | "
        f"{missed_branches} | {_percent(statements - missed, statements)} | "
        f"{_percent(branches - missed_branches, branches)} |"
    )


def totals_line(rows: list[tuple[str, dict]]) -> str:
    statements = sum(summary["num_statements"] for _, summary in rows)
    missed = sum(summary["missing_lines"] for _, summary in rows)
    branches = sum(summary["num_branches"] for _, summary in rows)
    missed_branches = sum(summary["missing_branches"] for _, summary in rows)
    return (
        f"lines {_percent(statements - missed, statements)} ({statements - missed}/{statements}), "
        f"branches {_percent(branches - missed_branches, branches)} ({branches - missed_branches}/{branches})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="an existing coverage data file: report it, run nothing")
    parser.add_argument("--keep", type=Path, help="run, and keep the coverage data in this file")
    parser.add_argument("--out", type=Path, default=OUT, help="the report to write (docs/coverage.md)")
    args = parser.parse_args(argv)

    source_dir = package_dir()
    command = (
        f"python -m coverage run --branch --source=<{source_dir.name} package dir> -m pytest conformance "
        "--backend=reference -p no:cacheprovider -q --ignore=conformance/test_checkpoint_ranks.py"
    )
    with tempfile.TemporaryDirectory() as tmp:
        data_file = (args.data or args.keep or Path(tmp) / ".coverage").resolve()
        if args.data:
            run = f"Reported from an existing data file ({args.data.name}), coverage.py {coverage.__version__}."
        else:
            returncode, summary, seconds = run_suite(source_dir, data_file)
            if returncode != 0:
                print(f"the conformance run failed (exit {returncode}): {summary}", file=sys.stderr)
                return 1
            today = datetime.date.today().isoformat()
            run = f"Last run {today}, coverage.py {coverage.__version__}: {summary}, {seconds:.0f} s under coverage."
        cov = coverage.Coverage(data_file=str(data_file), branch=True, source=[str(source_dir)])
        cov.load()
        report = Path(tmp) / "coverage.json"
        with open(os.devnull, "w") as quiet:
            stdout, sys.stdout = sys.stdout, quiet
            try:
                cov.json_report(outfile=str(report))
            finally:
                sys.stdout = stdout
        files = json.loads(report.read_text(encoding="utf-8"))["files"]

    rows: list[tuple[str, dict]] = []
    items: list[Item] = []
    for name in sorted(files, key=lambda name: Path(name).name):
        path = Path(name) if Path(name).is_absolute() else (Path.cwd() / name)
        module = f"reference/{Path(name).name}"
        rows.append((module, files[name]["summary"]))
        items += _items(Path(name).name, Source.read(path.resolve()), files[name])

    keys = {item.key for item in items}
    unexplained = [item for item in items if item.key not in EXPLANATIONS]
    stale = sorted(set(EXPLANATIONS) - keys)
    unknown = sorted(key for key, (category, _) in EXPLANATIONS.items() if category not in CATEGORIES)
    if unexplained or stale or unknown:
        for item in unexplained:
            print(f"unexplained: {item.module}:{item.line}: {json.dumps(item.key)}")
        for key in stale:
            print(f"stale (matches no uncovered item): {json.dumps(key)}")
        for key in unknown:
            print(f"unknown category: {json.dumps(key)}: {EXPLANATIONS[key][0]}")
        print(f"{args.out} not written: explain every uncovered item, once, in EXPLANATIONS", file=sys.stderr)
        return 1

    args.out.write_text(render(rows, items, run, command), encoding="utf-8")
    print(f"{totals_line(rows)}; {len(items)} uncovered items explained; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
