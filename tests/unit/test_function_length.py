"""No function over 80 lines in reference/, the Python of backends/, or the conformance machinery
(every module under conformance/ that is not a test module or a conftest.py): a newcomer reads a
function as named steps, not a 200-line body (issue 34).

A function's length is ``end_lineno - lineno + 1`` of its ``def`` node as ``ast`` reports it: from
the ``def`` line to its last line, docstring included, decorators not counted. Nested functions
and methods are measured on their own (and also count towards the function holding them).

``EXCEPTIONS`` names the functions allowed over the limit, each with its reason; aim for none.
"""

from __future__ import annotations

import ast
from pathlib import Path

from _suite import ROOT

LIMIT = 80
FOLDERS = ("reference", "backends", "conformance")
# folders that hold generated or installed copies, never the project's source
_SKIPPED_PARTS = {"build", "target", ".venv", "__pycache__"}

# "path:function" -> reason; the path relative to the repository root
EXCEPTIONS: dict[str, str] = {}


def _is_measured(path: Path) -> bool:
    """Whether ``path`` (relative to the root) is machinery or reference code, not a test module."""
    if _SKIPPED_PARTS & set(path.parts):
        return False
    if path.parts[0] == "conformance" and (path.name.startswith("test_") or path.name == "conftest.py"):
        return False
    return True


def function_lengths(root: Path = ROOT) -> dict[str, int]:
    """``"path:qualified.name" -> length in lines`` for every function and method in the measured folders."""
    lengths: dict[str, int] = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root)
            if not _is_measured(relative):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            _measure(tree, relative.as_posix(), "", lengths)
    return lengths


def _measure(node: ast.AST, path: str, prefix: str, lengths: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            assert child.end_lineno is not None
            lengths[f"{path}:{name}"] = child.end_lineno - child.lineno + 1
            _measure(child, path, f"{name}.", lengths)
        elif isinstance(child, ast.ClassDef):
            _measure(child, path, f"{prefix}{child.name}.", lengths)
        else:
            _measure(child, path, prefix, lengths)


def over_the_limit(lengths: dict[str, int], exceptions: dict[str, str]) -> dict[str, int]:
    """The functions of ``lengths`` over ``LIMIT`` lines that ``exceptions`` does not name."""
    return {name: length for name, length in lengths.items() if length > LIMIT and name not in exceptions}


def test_no_function_over_the_limit() -> None:
    too_long = over_the_limit(function_lengths(), EXCEPTIONS)
    listed = "\n".join(f"  {name}: {length} lines" for name, length in sorted(too_long.items(), key=lambda kv: -kv[1]))
    assert not too_long, (
        f"functions over {LIMIT} lines (split them into named steps, or add to EXCEPTIONS with a reason):\n{listed}"
    )


def test_exceptions_are_real_and_reasoned() -> None:
    lengths = function_lengths()
    for name, reason in EXCEPTIONS.items():
        assert name in lengths, f"EXCEPTIONS names {name}, which no longer exists: remove it"
        assert lengths[name] > LIMIT, f"EXCEPTIONS names {name}, now {lengths[name]} lines (<= {LIMIT}): remove it"
        assert reason.strip(), f"EXCEPTIONS gives {name} no reason"


def test_the_measure_sees_a_planted_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "reference").mkdir()
    # the decorator line is not counted: def line + LIMIT body lines
    planted = f"class C:\n    @staticmethod\n    def long():\n{body}\n\n\ndef short():\n    pass\n"
    (tmp_path / "reference" / "planted.py").write_text(planted)
    (tmp_path / "conformance").mkdir()
    # a test module is not measured, however long its tests
    (tmp_path / "conformance" / "test_planted.py").write_text(f"class TestLong:\n    def test_long(self):\n{body}\n")
    (tmp_path / "backends").mkdir()
    lengths = function_lengths(tmp_path)
    assert lengths == {"reference/planted.py:C.long": LIMIT + 1, "reference/planted.py:short": 2}
    assert over_the_limit(lengths, {}) == {"reference/planted.py:C.long": LIMIT + 1}
    assert over_the_limit(lengths, {"reference/planted.py:C.long": "planted"}) == {}
