"""The clause index: every SPEC.md clause, one hop from its code, its checks and its golden cases.

``python -m batchspec.conformance.tools.clause_index --write`` renders ``docs/clauses.md``: for each clause the
reference symbols that cite it (a literal ``[clause-id]`` in their docstring or comments), the
conformance tests that cite it (``@pytest.mark.clause``) and the golden cases that pin it.
``--check`` exits non-zero when the committed page is stale. ``tests/runs/test_clause_index_check.py``
runs the check and the lint below.

``item_citations`` goes one level down: for every enumerated item of a list clause
(``spec_clause_items``), the checks that cite that item (``"ctb-input-errors.3"``) by name:
conformance tests (``path::test``) and golden cases (``golden:<case>``); ``uncovered_items``
lists the items no check cites (``tests/unit/test_clause_items.py`` requires none).

The lint (``citation_problems``, ``tag_problems``) finds what makes a clause hard to follow:
a wildcard (``[xdoc-*]``) or an unknown clause id in ``reference/``, ``conformance/`` or
``golden/cases/``; an assert tag (``clause="…"`` or ``[id: …]``) inside a test that does not
cite that clause in its marks, or that is not a clause id at all (``example-A``); a mark
argument it cannot resolve (string literals and module-level tuples of them, here or imported
from another module, resolve; a parametrize row's own marks are left to collection) or that
is no clause id; a stale section sign (``§``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from batchspec.conformance.run.spec import SPEC_PATH, spec_clause_items, spec_clauses, split_citation

__all__ = [
    "INDEX_PATH",
    "check_citations",
    "citation_problems",
    "cited_ids",
    "collected_citations",
    "conformance_citations",
    "golden_case_citations",
    "golden_citations",
    "item_citations",
    "lint",
    "reference_citations",
    "render",
    "tag_problems",
    "uncovered_items",
]

ROOT = Path(__file__).resolve().parents[2]
INDEX_PATH = ROOT / "docs" / "clauses.md"
# A bracket group whose part before any ':' is a comma-separated list of clause-like ids.
_TOKEN = r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9*]+)+(?:\.\d+)?"
_GROUP = re.compile(rf"\[\s*({_TOKEN}(?:\s*,\s*{_TOKEN})*)\s*(?::[^\]]*)?\]", re.S)
SHOWN = 6  # names listed per cell before "+N more"


def cited_ids(text: str) -> list[tuple[int, str]]:
    """``(offset, citation)`` for every clause-like id cited in brackets in ``text``:
    ``[ctb-shift]``, ``[ctb-shift, ctb-positions: call]``, ``[ctb-input-errors.3]``; wildcards
    and unknown ids are returned too (the lint judges them)."""
    found = []
    for group in _GROUP.finditer(text):
        for token in re.split(r"\s*,\s*", group.group(1).strip()):
            found.append((group.start(), token))
    return found


LINTED = ("reference", "conformance", "golden/cases")


def lint(root: Path = ROOT) -> list[str]:
    """Every citation and tag problem in ``reference/``, ``conformance/`` and
    ``golden/cases/`` (this module, whose text shows the patterns it looks for, excepted)."""
    known = set(spec_clauses())
    problems = []
    for folder in LINTED:
        for path in sorted((root / folder).rglob("*.py")):
            if path.resolve() == Path(__file__).resolve():
                continue
            text = path.read_text(encoding="utf-8")
            rel = path.relative_to(root)
            problems += citation_problems(rel, text, known)
            if folder == "conformance" and path.name.startswith("test_"):
                problems += tag_problems(rel, text, known, root)
    return problems


def citation_problems(path: Path, text: str, known: set[str]) -> list[str]:
    """Wildcards, unknown ids and section signs in one file."""
    problems = []
    for offset, token in cited_ids(text):
        line = text.count("\n", 0, offset) + 1
        clause, _ = split_citation(token)
        if "*" in token:
            problems.append(f"{path}:{line}: wildcard clause citation [{token}]; cite the clause ids one by one")
        elif clause not in known and not _not_a_clause(clause):
            problems.append(f"{path}:{line}: unknown clause id [{token}]")
    for match in re.finditer("§", text):
        line = text.count("\n", 0, match.start()) + 1
        problems.append(f"{path}:{line}: section sign; name the clause id or the section's title instead")
    return problems


def _not_a_clause(token: str) -> bool:
    """Bracketed ids that are not clause citations: SPEC's decisions (``D-6``)."""
    return re.fullmatch(r"D-\d+", token) is not None


def _literal_prefix(node: ast.AST) -> str | None:
    """A string constant, or the constant head of an f-string (``f"x.{i}"`` -> ``"x."``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


_IMPORTED: dict[Path, dict[str, tuple[ast.expr, dict]]] = {}


def _module_constants(tree: ast.Module, root: Path) -> dict[str, tuple[ast.expr, dict]]:
    """Name -> (value, the namespace it resolves in) for a module's top-level ``NAME = value``
    assignments, and for the names it imports from another module of the package
    (``from batchspec.conformance.helpers.invariants import CONVERTED_BATCH_CLAUSES``)."""
    names: dict[str, tuple[ast.expr, dict]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        elif isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith("batchspec."):
            parts = (statement.module or "").split(".")[1:]
            source = next(
                (
                    p
                    for p in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py"))
                    if p.is_file()
                ),
                None,
            )
            if source is not None:
                if source not in _IMPORTED:
                    _IMPORTED[source] = {}  # a cycle of imports resolves to nothing, not forever
                    _IMPORTED[source] = _module_constants(ast.parse(source.read_text(encoding="utf-8")), root)
                imported = _IMPORTED[source]
                for alias in statement.names:
                    if alias.name in imported:
                        names[alias.asname or alias.name] = imported[alias.name]
            continue
        else:
            continue
        if isinstance(target, ast.Name):
            names[target.id] = (value, names)
    return names


def _clause_ids(node: ast.expr, names: Mapping[str, tuple[ast.expr, dict]]) -> list[str] | None:
    """The clause ids a ``@pytest.mark.clause`` argument stands for, or None where the lint
    cannot tell: a string (an f-string by its constant head, ``f"x.{i}"`` -> ``x``), a tuple or
    list of them, ``*`` of one, ``+`` of two, a generator of such strings, or a module-level
    name bound to any of these (``NAME = ("ctb-shift", ...)``, or imported from another module)."""
    if isinstance(node, ast.Starred):
        return _clause_ids(node.value, names)
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        head = _literal_prefix(node)
        return None if not head or not head.rstrip(".") else [head.rstrip(".")]
    if isinstance(node, (ast.Tuple, ast.List)):
        found: list[str] = []
        for element in node.elts:
            ids = _clause_ids(element, names)
            if ids is None:
                return None
            found += ids
        return found
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _clause_ids(node.left, names), _clause_ids(node.right, names)
        return None if left is None or right is None else left + right
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        return _clause_ids(node.elt, names) if isinstance(node.elt, (ast.Constant, ast.JoinedStr)) else None
    if isinstance(node, ast.Name) and node.id in names:
        value, namespace = names[node.id]
        return _clause_ids(value, namespace)
    return None


@dataclass
class _Marks:
    """The clause ids a test's marks cite; ``open`` when some come from a parametrize table's
    row (``pytest.param(c, marks=pytest.mark.clause(*c.clauses))``), which only collection sees
    (``conformance/run/citations.py`` checks those); ``problems``: arguments the lint cannot resolve
    and ids that are no clause."""

    cited: set[str] = field(default_factory=set)
    open: bool = False
    problems: list[str] = field(default_factory=list)


def _marks(function: ast.FunctionDef, names: Mapping[str, tuple[ast.expr, dict]] | None = None) -> _Marks:
    """The clause ids a test cites: its ``@pytest.mark.clause(...)`` decorators and the clause
    marks of its ``pytest.param(..., marks=...)`` parameters, module-level constants resolved."""
    marks = _Marks()
    for decorator in function.decorator_list:
        bound = {
            target.id
            for node in ast.walk(decorator)
            if isinstance(node, ast.comprehension)
            for target in ast.walk(node.target)
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(decorator):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "clause"):
                continue
            for arg in node.args:
                ids = _clause_ids(arg, names or {})
                if ids is None and any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(arg)):
                    marks.open = True
                elif ids is None:
                    marks.problems.append(
                        f"{function.name}: cannot resolve the clause mark argument {ast.unparse(arg)!r}: write string "
                        "literals, or a module-level tuple of them (here or imported from another module)"
                    )
                else:
                    marks.cited.update(split_citation(cid)[0] for cid in ids)
    return marks


def tag_problems(path: Path, text: str, known: set[str], root: Path = ROOT) -> list[str]:
    """Clause marks the lint cannot resolve or that are no clause id, and assert tags inside a
    test function that its marks do not cite, or that are no clause id.

    A mark's arguments are string literals or module-level constants (``_clause_ids``; names
    imported from another module of the package are read from ``root``). A tag is a ``clause=``
    keyword (a string, the constant head of an f-string, or such a constant) or a bracketed
    ``[id: …]`` / ``[id]`` inside a string of the test's body.
    """
    problems = []
    tree = ast.parse(text)
    names = _module_constants(tree, root)
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef) or not function.name.startswith("test"):
            continue
        found = _marks(function, names)
        problems += [f"{path}:{function.lineno}: {problem}" for problem in found.problems]
        unknown = sorted(cid for cid in found.cited if cid not in known)
        problems += [f"{path}:{function.lineno}: {function.name}: mark [{cid}] is not a clause id" for cid in unknown]
        marks = found.cited
        if not marks or found.open:
            continue
        body = function.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
            body = body[1:]  # the docstring may mention other clauses; only asserts are tags
        nodes = list(ast.walk(ast.Module(body=body, type_ignores=[])))
        # An f-string's text parts are read with the f-string, not again on their own.
        parts = {id(v) for node in nodes if isinstance(node, ast.JoinedStr) for v in node.values}
        for node in nodes:
            tags: list[str] = []
            if isinstance(node, ast.keyword) and node.arg == "clause":
                head = _literal_prefix(node.value)
                if head is not None:
                    tags.extend(t for t in re.split(r"\s*,\s*", head.split(":")[0]) if t)
                elif isinstance(node.value, ast.Name):
                    tags.extend(_clause_ids(node.value, names) or ())
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
                tags.extend(token for _, token in cited_ids(node.value))
            elif isinstance(node, ast.JoinedStr):
                text_parts = (v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
                tags.extend(token for _, token in cited_ids("".join(map(str, text_parts))))
            for tag in tags:
                clause = split_citation(tag.rstrip("."))[0]
                if _not_a_clause(clause) or "*" in clause:
                    continue
                where = f"{path}:{getattr(node, 'lineno', function.lineno)}: {function.name}"
                if clause not in known:
                    problems.append(f"{where}: tag {tag!r} is not a clause id")
                elif clause not in marks:
                    problems.append(f"{where}: tag [{clause}] is not among the test's marks {sorted(marks)}")
    return problems


def reference_citations(root: Path = ROOT) -> dict[str, set[str]]:
    """Clause id -> ``path::symbol`` of every reference function, method or class whose
    docstring or body cites it (the innermost one around the citation), or ``path`` for a
    citation at module level."""
    index: dict[str, set[str]] = defaultdict(set)
    for path in sorted((root / "reference").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        spans = []
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                spans.append((node.lineno, node.end_lineno or node.lineno, node))
        rel = path.relative_to(root).as_posix()
        for offset, token in cited_ids(text):
            line = text.count("\n", 0, offset) + 1
            around = [s for s in spans if s[0] <= line <= s[1]]
            if around:
                start, _, node = max(around, key=lambda s: s[0])
                owner = [
                    n for lo, hi, n in spans if lo <= start <= hi and isinstance(n, ast.ClassDef) and n is not node
                ]
                name = f"{owner[-1].name}.{node.name}" if owner else node.name
                index[split_citation(token)[0]].add(f"{rel}::{name}")
            else:
                index[split_citation(token)[0]].add(rel)
    return index


def _by_clause(citations: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Citation -> names, folded to clause id -> names (an item counts under its clause)."""
    index: dict[str, set[str]] = defaultdict(set)
    for citation, names in citations.items():
        index[split_citation(citation)[0]] |= set(names)
    return index


def conformance_citations(root: Path = ROOT) -> dict[str, set[str]]:
    """Clause id -> ``path::test`` of every conformance test that cites it, read from the
    collected items' marks (parametrised tests once)."""
    return _by_clause(collected_citations(root))


def collected_citations(root: Path = ROOT) -> dict[str, set[str]]:
    """Citation as written (a clause id, or one item of it: ``"ctb-input-errors.3"``) ->
    ``path::test`` of every conformance test that cites it, read from the collected items'
    marks (a parametrised test once, with the marks of all its parameters). One collection of
    the suite (a few seconds); nothing is run."""
    import pytest

    class _Collector:
        def __init__(self) -> None:
            self.index: dict[str, set[str]] = defaultdict(set)

        def pytest_collection_modifyitems(self, items):  # a pytest hook
            for item in items:
                test = item.nodeid.split("[")[0]
                for mark in item.iter_markers("clause"):
                    for cid in mark.args:
                        self.index[cid].add(test)

    collector = _Collector()
    listing = io.StringIO()
    with contextlib.redirect_stdout(listing):  # pytest lists what it collected; not needed here
        code = pytest.main(
            [str(root / "conformance"), "--collect-only", "-qq", "-p", "no:cacheprovider", "--backend=reference"],
            plugins=[collector],
        )
    if code not in (0, 5):
        raise RuntimeError(f"collecting the conformance suite failed (pytest exit code {code}):\n{listing.getvalue()}")
    return collector.index


def golden_citations() -> dict[str, set[str]]:
    """Clause id -> the names of the golden cases that pin it (a case citing one enumerated
    item, ``"ctb-input-errors.3"``, pins its clause)."""
    return _by_clause(golden_case_citations())


def golden_case_citations() -> dict[str, set[str]]:
    """Citation as written in a case's ``clauses`` -> the names of the golden cases citing it."""
    from batchspec.conformance.tools.goldens import all_cases

    index: dict[str, set[str]] = defaultdict(set)
    for case in all_cases():
        for cid in case.clauses:
            index[cid].add(case.name)
    return index


# The one test that runs every stored golden case: its marks are the cases' clauses, which
# the item index names case by case instead.
GOLDEN_RUNNER = "test_goldens.py::test_golden_case"


def check_citations(root: Path = ROOT) -> dict[str, set[str]]:
    """Citation as written -> the checks that cite it: conformance tests as ``path::test``
    (the golden runner left out) and golden cases as ``golden:<case>``. Collects the suite once
    (``collected_citations``); pass the result to ``item_citations``."""
    index: dict[str, set[str]] = defaultdict(set)
    for citation, tests in collected_citations(root).items():
        index[citation] |= {t for t in tests if not t.endswith(GOLDEN_RUNNER)}
    for citation, cases in golden_case_citations().items():
        index[citation] |= {f"golden:{case}" for case in cases}
    return index


def item_citations(
    citations: Mapping[str, set[str]], items: Mapping[str, set[int]] | None = None
) -> dict[str, dict[int, set[str]]]:
    """For every clause whose requirement is a numbered list (``items``: clause id -> its item
    numbers, ``spec_clause_items()`` by default), item number -> the checks citing exactly that
    item (``citations``: citation -> check names, as ``check_citations`` gives). A check that
    cites only the clause covers none of its items: each item needs a check of its own."""
    items = spec_clause_items() if items is None else items
    return {
        clause: {number: set(citations.get(f"{clause}.{number}", ())) for number in sorted(numbers)}
        for clause, numbers in items.items()
        if numbers
    }


def uncovered_items(index: Mapping[str, Mapping[int, set[str]]]) -> list[str]:
    """``"clause.N"`` for every item of ``item_citations``'s index that no check cites, in SPEC order."""
    return [
        f"{clause}.{number}" for clause, by_item in index.items() for number, checks in by_item.items() if not checks
    ]


def _cell(names: set[str], link) -> str:
    ordered = sorted(names)
    shown = ", ".join(link(n) for n in ordered[:SHOWN])
    more = f" +{len(ordered) - SHOWN} more" if len(ordered) > SHOWN else ""
    return (f"{len(ordered)}: " if len(ordered) > 1 else "") + shown + more if ordered else "—"


def render(reference: dict, conformance: dict, golden: dict, spec_path: Path = SPEC_PATH) -> str:
    """The Markdown page: one table row per clause, grouped by SPEC section."""
    text = spec_path.read_text(encoding="utf-8")
    levels = spec_clauses(spec_path)
    sections = [(m.start(), m.group(1)) for m in re.finditer(r"^## (\d+\. .+)$", text, re.M)]

    def section_of(cid: str) -> str:
        at = text.index(f"**[{cid}]**")
        titles = [title for start, title in sections if start < at]
        return titles[-1] if titles else "Preamble"

    lines = [
        "# Clause index",
        "",
        "Generated by `python -m batchspec.conformance.tools.clause_index --write` from SPEC.md, `reference/`, the",
        "conformance tests' marks and `golden/cases/`; `tests/runs/test_clause_index_check.py` fails when it is",
        "stale. For each clause: the reference symbols that cite it, the conformance tests that cite",
        "it, and the golden cases that pin it (their data: `golden/data/<case>/`).",
    ]
    current = None
    for cid, level in levels.items():
        section = section_of(cid)
        if section != current:
            current = section
            lines += [
                "",
                f"## {section}",
                "",
                "| clause | level | reference | conformance tests | golden cases |",
                "|---|---|---|---|---|",
            ]

        def ref_link(name: str) -> str:
            return f"[`{name.split('::')[-1]}`](../{name.split('::')[0]})"

        def test_link(name: str) -> str:
            return f"[`{name.split('::')[-1]}`](../{name.split('::')[0]})"

        def golden_link(name: str) -> str:
            return f"[`{name}`](../golden/data/{name}/record.json)"

        lines.append(
            f"| [{cid}](../SPEC.md#{cid}) | {level} | {_cell(reference.get(cid, set()), ref_link)} | "
            f"{_cell(conformance.get(cid, set()), test_link)} | {_cell(golden.get(cid, set()), golden_link)} |"
        )
    return "\n".join(lines) + "\n"


def build() -> str:
    """The page as it should be now."""
    return render(reference_citations(), conformance_citations(), golden_citations())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m batchspec.conformance.tools.clause_index", description=__doc__.splitlines()[0]
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help=f"write {INDEX_PATH.relative_to(ROOT)}")
    group.add_argument("--check", action="store_true", help="exit 1 when the committed page is stale")
    args = parser.parse_args(argv)
    page = build()
    if args.write:
        INDEX_PATH.parent.mkdir(parents=True, exist_ok=True)
        INDEX_PATH.write_text(page, encoding="utf-8")
        print(f"wrote {INDEX_PATH.relative_to(ROOT)}")
        return 0
    if not INDEX_PATH.exists() or INDEX_PATH.read_text(encoding="utf-8") != page:
        print(
            f"{INDEX_PATH.relative_to(ROOT)} is stale: run python -m batchspec.conformance.tools.clause_index --write"
        )
        return 1
    print(f"{INDEX_PATH.relative_to(ROOT)} is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
