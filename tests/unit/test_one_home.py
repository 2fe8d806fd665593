"""One home per hand-written expected value (issue 11): a tensor literal written by hand lives
either in ``golden/cases/`` (every canon expected value, and every input a golden case holds)
or in ``conformance/`` (what a stored case cannot express), never in both. A conformance check
that needs a golden case's input on a live object reads it from the stored case
(``batchspec.conformance.golden.case_values``); the SPEC's constants live once, in ``batchspec.conformance.helpers.literals``
(``IGNORE_INDEX``, ``THD_PAD``).

A *tensor literal* is a list or tuple display, nested at least once, whose leaves are all
integer constants (``-100`` included; ``True``/``False`` are not integers), with at least four
of them: ``long([[1, 1, 2, 0]])``, ``[[0, 1], [2, 3]]``. Only the outermost such display counts.
Within ``golden/cases/`` a literal may recur (one input reused by several cases, or two cases
whose values coincide); a second home in ``conformance/`` is what this test refuses, naming
every occurrence by file and line.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from _suite import ROOT

MIN_VALUES = 4
TREES = {"conformance": "conformance", "golden/cases": "golden/cases"}


def _leaves(node: ast.AST) -> list[int] | None:
    """The integers of a list/tuple display of integer constants (nested or not), else None."""
    if isinstance(node, (ast.List, ast.Tuple)):
        values: list[int] = []
        for element in node.elts:
            inner = _leaves(element)
            if inner is None:
                return None
            values.extend(inner)
        return values
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return [node.value]
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return [-node.operand.value]
    return None


def _canonical(node: ast.AST) -> str:
    """The literal's value as text, lists and tuples alike: ``[[1,2],[3,4]]``."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return "[" + ",".join(_canonical(e) for e in node.elts) + "]"
    return str(_leaves(node)[0])


def tensor_literals(path: Path) -> list[tuple[str, int]]:
    """``(value, line)`` of every tensor literal of a Python file (the outermost display only)."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.List, ast.Tuple)) and any(isinstance(e, (ast.List, ast.Tuple)) for e in node.elts):
            values = _leaves(node)
            if values is not None and len(values) >= MIN_VALUES:
                found.append((_canonical(node), node.lineno))
                return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


def literal_homes(root: Path = ROOT) -> dict[str, dict[str, list[str]]]:
    """Tree (``conformance``, ``golden/cases``) -> tensor literal -> its ``file:line`` places."""
    homes: dict[str, dict[str, list[str]]] = {}
    for tree, folder in TREES.items():
        places: dict[str, list[str]] = defaultdict(list)
        for path in sorted((root / folder).rglob("*.py")):
            for value, line in tensor_literals(path):
                places[value].append(f"{path.relative_to(root).as_posix()}:{line}")
        homes[tree] = dict(places)
    return homes


def two_homes(root: Path = ROOT) -> list[str]:
    """One line per tensor literal found in both trees, with every place it is written."""
    homes = literal_homes(root)
    conformance, golden = homes["conformance"], homes["golden/cases"]
    return [
        f"{value}: {', '.join(conformance[value])} and {', '.join(golden[value])}"
        for value in sorted(set(conformance) & set(golden))
    ]


def test_no_tensor_literal_is_written_in_both_conformance_and_golden_cases():
    duplicates = two_homes()
    assert not duplicates, (
        "hand-written tensor literals with two homes (keep the golden case; a conformance check that needs "
        "its input reads it with conformance.golden.case_values):\n  " + "\n  ".join(duplicates)
    )


def test_the_scan_finds_a_planted_second_home(tmp_path):
    (tmp_path / "conformance").mkdir()
    (tmp_path / "golden" / "cases").mkdir(parents=True)
    (tmp_path / "conformance" / "test_planted.py").write_text(
        "A = long([[12, 13, -100, 22]])\n"
        "B = [1, 2, 3, 4, 5]\n"  # flat: not a tensor literal
        "C = bools([[True, False], [False, True]])\n"  # not integers
        "D = [[7], [8]]\n",  # fewer than four values
        encoding="utf-8",
    )
    (tmp_path / "golden" / "cases" / "planted.py").write_text(
        "X = 1\nA = long(((12, 13, -100, 22),))\nB = [1, 2, 3, 4, 5]\nC = [[True, False], [False, True]]\n"
        "D = [[7], [8]]\nE = [[5, 6], [7, 8]]\nF = {'k': [[5, 6], [7, 8]]}\n",
        encoding="utf-8",
    )
    assert two_homes(tmp_path) == ["[[12,13,-100,22]]: conformance/test_planted.py:1 and golden/cases/planted.py:2"]
    assert literal_homes(tmp_path)["golden/cases"]["[[5,6],[7,8]]"] == [
        "golden/cases/planted.py:6",
        "golden/cases/planted.py:7",
    ]  # a literal may recur within golden/cases
