"""The layers of the package and which may import which (CONTRIBUTING.md, "How a check runs").

Every ``.py`` of the package folders (``PACKAGES``: the top-level folders installed as
``batchspec.<folder>``, and ``batchspec/`` itself) is parsed with ``ast``; each import of
``batchspec.<folder>...`` (absolute, lazy ones inside functions included) and each relative
import is resolved to a module name, both ends are mapped to a layer (``layer_of``), and every
pair is checked against ``RULES``, the one table of the rules:

- ``reference`` imports nothing of batchspec but ``reference`` (it is the readable reference;
  it never depends on the suite or another backend);
- ``backends`` never import ``bench`` or ``conformance`` (a backend is written as an outside
  author would write one; the suite and the benchmarks import backends, not the reverse), and
  use no private name (``_x``) of ``reference``: neither ``from batchspec.reference.x import _y``
  nor ``batchspec.reference._x`` nor ``alias._y`` on a module alias of the reference (issue 32:
  a differential check cannot see a bug in code both sides run; public names -- the contract
  types, ``Datum``, ``ZephonDataLoader``, constants -- may be imported);
- ``conformance.helpers`` never imports ``conformance.golden``: the direction between the two
  is golden -> helpers (the golden runner, builder and case API compare and build with the
  suite's asserts, inputs and pipelines), never both ways;
- ``conformance.run`` (the run machinery), ``conformance.helpers`` and ``conformance.golden``
  never import ``conformance.tools`` (the command-line tools): a tool imports what it reports
  on, never the reverse, so a run never depends on a command;
- ``golden.cases`` (``golden/cases/*.py``, the case definitions) import of batchspec only the
  golden case API, ``batchspec.conformance.golden.api``.

``test_the_checker_reports_a_planted_wrong_import`` runs the same checker on a tree with wrong
imports planted, so a checker that finds nothing cannot pass for a clean tree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# folder of the repository -> the package it is installed as (pyproject.toml, package-dir)
PACKAGES = {
    "reference": "batchspec.reference",
    "backends": "batchspec.backends",
    "conformance": "batchspec.conformance",
    "bench": "batchspec.bench",
    "golden": "batchspec.golden",
    "batchspec": "batchspec",
}

# module-name prefix -> layer; the longest matching prefix wins (``layer_of``)
LAYERS = {
    "batchspec": "batchspec",
    "batchspec.reference": "reference",
    "batchspec.backends": "backends",
    "batchspec.bench": "bench",
    "batchspec.conformance": "conformance",
    "batchspec.conformance.helpers": "conformance.helpers",
    "batchspec.conformance.golden": "conformance.golden",
    "batchspec.conformance.golden.api": "conformance.golden.api",
    "batchspec.conformance.run": "conformance.run",
    "batchspec.conformance.tools": "conformance.tools",
    "batchspec.golden": "golden",
    "batchspec.golden.cases": "golden.cases",
}
CONFORMANCE = frozenset(
    {
        "conformance",
        "conformance.helpers",
        "conformance.golden",
        "conformance.golden.api",
        "conformance.run",
        "conformance.tools",
    }
)
NO_TOOLS = "a run never depends on a command: conformance.run, .helpers and .golden never import conformance.tools"


@dataclass(frozen=True)
class Rule:
    """What a module of ``layer`` may import of batchspec: only ``only`` (when given), never
    ``never``."""

    layer: str
    why: str
    only: frozenset[str] | None = None
    never: frozenset[str] = frozenset()
    no_private: frozenset[str] = frozenset()  # layers whose private names (``_x``) are never used


# The rules: the one table. A layer without a row may import any layer.
RULES = {
    rule.layer: rule
    for rule in (
        Rule("reference", "reference imports nothing of batchspec but reference", only=frozenset({"reference"})),
        Rule(
            "backends",
            "backends never import bench or conformance, nor use a private name of reference",
            never=frozenset({"bench"}) | CONFORMANCE,
            no_private=frozenset({"reference"}),
        ),
        Rule(
            "conformance.helpers",
            "conformance.golden imports conformance.helpers, never the reverse (one direction)",
            never=frozenset({"conformance.golden", "conformance.golden.api", "conformance.tools"}),
        ),
        Rule("conformance.run", NO_TOOLS, never=frozenset({"conformance.tools"})),
        Rule("conformance.golden", NO_TOOLS, never=frozenset({"conformance.tools"})),
        Rule(
            "golden.cases",
            "golden/cases import of batchspec only the golden case API (batchspec.conformance.golden.api)",
            only=frozenset({"conformance.golden.api"}),
        ),
    )
}


def layer_of(module: str) -> str | None:
    """The layer of ``module`` (a dotted name), or None outside batchspec."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        layer = LAYERS.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    """``(dotted name, is a package's __init__)`` of ``path`` under ``root``, installed as
    ``PACKAGES`` maps its top folder."""
    relative = path.relative_to(root).with_suffix("")
    parts = [PACKAGES[relative.parts[0]], *relative.parts[1:]]
    package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if package else parts), package


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import in ``path``: absolute names as written, relative ones
    resolved against the module's package; ``from X import name`` also as ``X.name`` (the name
    may be a submodule)."""
    name, package = module_name(path, root)
    base = name.split(".") if package else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                module = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            out.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names if alias.name != "*")
    return out


def _is_private(module: str) -> bool:
    """Whether a dotted name has a private part (``_x``; dunders such as ``__version__`` are not)."""
    return any(part.startswith("_") and not part.endswith("__") for part in module.split("."))


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` of an attribute chain on a plain name, as its parts; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def used_names(path: Path, root: Path) -> list[tuple[int, str]]:
    """``(line, module.attribute...)`` for every attribute chain read on a name bound by an
    import in ``path`` (``import batchspec.reference as r`` then ``r._x`` gives
    ``batchspec.reference._x``; ``import batchspec.reference.convert`` then
    ``batchspec.reference.convert._x`` too), resolved as ``imported_modules`` resolves imports."""
    name, package = module_name(path, root)
    base = name.split(".") if package else name.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bound: dict[str, str] = {}  # local name -> the module (or module.name) it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                module = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name] = f"{module}.{alias.name}"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = _dotted(node)
            if parts and parts[0] in bound:
                out.append((node.lineno, ".".join([bound[parts[0]], *parts[1:]])))
    return out


def violations(root: Path) -> list[str]:
    """Every import under ``root``'s package folders that breaks a rule of ``RULES``, as
    ``path:line: importer imports target: why``."""
    found: dict[str, str] = {}  # path:line -> the first (shortest) forbidden name it imports
    for folder in PACKAGES:
        for path in sorted((root / folder).rglob("*.py")):
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            importer, _ = module_name(path, root)
            rule = RULES.get(layer_of(importer) or "")
            if rule is None:
                continue
            for line, target in imported_modules(path, root):
                layer = layer_of(target)
                if layer is None:
                    continue
                where = f"{path.relative_to(root)}:{line}"
                if ((rule.only is not None and layer not in rule.only) or layer in rule.never) and where not in found:
                    found[where] = f"{where}: {importer} imports {target}: {rule.why}"
                elif layer in rule.no_private and _is_private(target) and where not in found:
                    found[where] = f"{where}: {importer} imports private {target}: {rule.why}"
            if rule.no_private:
                for line, target in used_names(path, root):
                    layer = layer_of(target)
                    where = f"{path.relative_to(root)}:{line}"
                    if layer in rule.no_private and _is_private(target) and where not in found:
                        found[where] = f"{where}: {importer} uses private {target}: {rule.why}"
    return sorted(found.values())


def test_the_package_keeps_its_layers():
    problems = violations(ROOT)
    assert problems == [], "imports across layers that RULES forbids:\n  " + "\n  ".join(problems)


def test_the_checker_reports_a_planted_wrong_import(tmp_path):
    """One wrong import per rule, planted in a copy of the layout (absolute, relative and lazy
    forms): each is reported, and the allowed imports beside them are not."""
    files = {
        "reference/contract.py": "from batchspec.reference import metadata\nfrom batchspec.conformance import spec\n",
        "backends/vectorized/__init__.py": "from . import convert\n",
        "backends/vectorized/convert.py": "def f():\n    from ...bench import workloads\n",
        "conformance/helpers/case_values.py": "from batchspec.conformance.golden.verified_read import load_case\n",
        "conformance/golden/runner.py": "from batchspec.conformance.helpers.asserts import check\n",
        "conformance/golden/render.py": "def f():\n    from batchspec.conformance.tools.goldens import main\n",
        "conformance/run/verdict.py": "from batchspec.conformance.tools import scoreboard\n",
        "conformance/tools/scoreboard.py": "from batchspec.conformance.run.report import render_scoreboard\n",
        "golden/cases/convert.py": "from batchspec.conformance.golden.api import Case\nimport batchspec.reference\n",
        "bench/test_x.py": "from batchspec.backends.automodel.upstream import load_upstream\n",
        # private names of reference: imported, imported from a submodule, read on an alias or a
        # dotted module; the public names beside them are allowed
        "backends/x/a.py": "from batchspec.reference import Datum, _records\n",
        "backends/x/b.py": "from batchspec.reference.convert import TOKEN_FIELD_CANDIDATES, _check_options\n",
        "backends/x/c.py": "from batchspec.reference import collaters as ref\nref.default_collater\nref._pad_value(1)\n",
        "backends/x/d.py": "import batchspec.reference.attention\nbatchspec.reference.attention._xdoc_ids({})\n",
        "backends/x/e.py": "import batchspec.reference as r\nr.__name__\nr.convert.INT64_MAX\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    for folder in PACKAGES:
        (tmp_path / folder).mkdir(exist_ok=True)
    found = violations(tmp_path)
    assert [line.split(": ")[0] for line in found] == [
        "backends/vectorized/convert.py:2",
        "backends/x/a.py:1",
        "backends/x/b.py:1",
        "backends/x/c.py:3",
        "backends/x/d.py:2",
        "conformance/golden/render.py:2",
        "conformance/helpers/case_values.py:1",
        "conformance/run/verdict.py:1",
        "golden/cases/convert.py:2",
        "reference/contract.py:2",
    ], found
    assert "batchspec.backends.vectorized.convert imports batchspec.bench: " in found[0]
    assert "batchspec.conformance.run.verdict imports batchspec.conformance.tools: " in found[7]
    assert "batchspec.reference.contract imports batchspec.conformance: " in found[9]
    assert "imports private batchspec.reference._records: " in found[1]
    assert "uses private batchspec.reference.collaters._pad_value: " in found[3]
