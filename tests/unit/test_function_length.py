"""No function over 80 lines in reference/, the Python of backends/, or the conformance machinery
(every module under conformance/ that is not a test module or a conftest.py): a newcomer reads a
function as named steps, not a 200-line body (issue 34).

A function's length is ``end_lineno - lineno + 1`` of its ``def`` node as ``ast`` reports it: from
the ``def`` line to its last line, docstring included, decorators not counted. Nested functions
and methods are measured on their own (and also count towards the function holding them).

The Rust of backends/ (``*.rs``) is held to the same limit: a ``fn`` is measured from its ``fn``
line to the line of the brace that closes its body, found by counting brace depth once comments,
string and character literals are blanked out (``rust_function_lengths``). Functions of one file
that share a name (methods of two ``impl``s) are told apart by their line (``name@line``).

``EXCEPTIONS`` names the functions allowed over the limit, each with its reason; aim for none.
"""

from __future__ import annotations

import ast
import re
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
    for path in sorted((root / "backends").rglob("*.rs")):
        relative = path.relative_to(root)
        if not _SKIPPED_PARTS & set(relative.parts):
            lengths.update(rust_function_lengths(path.read_text(encoding="utf-8"), relative.as_posix()))
    return lengths


# a line comment, a block comment (not nested), a string literal, a character literal ('{', '\'')
_RUST_NOISE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])'", re.S)
_RUST_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def rust_function_lengths(source: str, path: str) -> dict[str, int]:
    """``"path:name" -> length in lines`` of every ``fn`` with a body in Rust ``source``: from its
    ``fn`` line to the line of the brace closing its body (a declaration ending in ``;`` has none)."""
    # blank out what may hold braces without being code, keeping every newline where it was
    code = _RUST_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)
    lengths: dict[str, int] = {}
    for match in _RUST_FN.finditer(code):
        start = match.end()
        opening = code.find("{", start)
        if opening < 0 or ";" in code[start:opening]:
            continue  # no body (a trait's declaration, an extern block's import)
        depth, end = 0, opening
        for end in range(opening, len(code)):
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            if depth == 0:
                break
        first, last = code.count("\n", 0, match.start()) + 1, code.count("\n", 0, end) + 1
        name = f"{path}:{match.group(1)}"
        if name in lengths:
            name = f"{name}@{first}"
        lengths[name] = last - first + 1
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


def test_the_measure_sees_a_planted_long_rust_function(tmp_path: Path) -> None:
    """A Rust ``fn`` over the limit is reported; braces in comments, strings and character
    literals, a multi-line signature and a body-less declaration do not fool the count."""
    body = "\n".join(f"    let x{i} = {i};" for i in range(LIMIT - 2))
    planted = (
        "/// a doc comment with a brace {\n"
        "pub fn long<'a>(\n    values: &'a [i64],\n) -> usize {\n"  # lines 2-4
        f"{body}\n"
        "    let _ = \"}}}\"; let _ = '}'; // }\n"
        "}\n"  # closes long: its fn line, 2 more of signature, LIMIT - 2 + 1 of body, this one
        "trait T {\n    fn declared(&self) -> i64;\n    fn given(&self) -> i64 {\n        1\n    }\n}\n"
    )
    native = tmp_path / "backends" / "native" / "src"
    native.mkdir(parents=True)
    (native / "planted.rs").write_text(planted)
    (tmp_path / "backends" / "native" / "target").mkdir()
    (tmp_path / "backends" / "native" / "target" / "built.rs").write_text(planted)  # never the project's source
    (tmp_path / "reference").mkdir()
    (tmp_path / "conformance").mkdir()
    lengths = function_lengths(tmp_path)
    assert lengths == {
        "backends/native/src/planted.rs:long": LIMIT + 3,
        "backends/native/src/planted.rs:given": 3,
    }
    assert over_the_limit(lengths, {}) == {"backends/native/src/planted.rs:long": LIMIT + 3}


def test_the_rust_measure_sees_the_native_kernels() -> None:
    """The real Rust sources are measured (not an empty walk): the row pass and its steps."""
    lengths = function_lengths()
    assert "backends/native/src/kernels.rs:convert_rows" in lengths
    assert "backends/native/src/kernels.rs:convert_row" in lengths
    assert all(length >= 1 for name, length in lengths.items() if name.endswith(".rs"))
