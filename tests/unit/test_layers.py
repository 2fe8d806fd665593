"""The layers of the package and which may import which (CONTRIBUTING.md, "How a check runs").

Every ``.py`` of the package folders (``PACKAGES``: the top-level folders installed as
``batchspec.<folder>``, and ``batchspec/`` itself) is parsed with ``ast``; each import of
``batchspec.<folder>...`` (absolute, lazy ones inside functions included) and each relative
import is resolved to a module name, both ends are mapped to a layer (``layer_of``), and every
pair is checked against ``RULES``, the one table of the rules:

- ``reference`` imports nothing of batchspec but ``reference`` (it is the readable reference;
  it never depends on the suite or another backend);
- ``backends`` never import ``bench`` or ``conformance`` (a backend is written as an outside
  author would write one; the suite and the benchmarks import backends, not the reverse);
- ``conformance.helpers`` never imports ``conformance.golden``: the direction between the two
  is golden -> helpers (the golden runner, builder and case API compare and build with the
  suite's asserts, inputs and pipelines), never both ways;
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
    "batchspec.golden": "golden",
    "batchspec.golden.cases": "golden.cases",
}
CONFORMANCE = frozenset({"conformance", "conformance.helpers", "conformance.golden", "conformance.golden.api"})


@dataclass(frozen=True)
class Rule:
    """What a module of ``layer`` may import of batchspec: only ``only`` (when given), never
    ``never``."""

    layer: str
    why: str
    only: frozenset[str] | None = None
    never: frozenset[str] = frozenset()


# The rules: the one table. A layer without a row may import any layer.
RULES = {
    rule.layer: rule
    for rule in (
        Rule("reference", "reference imports nothing of batchspec but reference", only=frozenset({"reference"})),
        Rule("backends", "backends never import bench or conformance", never=frozenset({"bench"}) | CONFORMANCE),
        Rule(
            "conformance.helpers",
            "conformance.golden imports conformance.helpers, never the reverse (one direction)",
            never=frozenset({"conformance.golden", "conformance.golden.api"}),
        ),
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
        "conformance/helpers/stored.py": "from batchspec.conformance.golden.store import load_case\n",
        "conformance/golden/runner.py": "from batchspec.conformance.helpers.asserts import check\n",
        "golden/cases/convert.py": "from batchspec.conformance.golden.api import Case\nimport batchspec.reference\n",
        "bench/test_x.py": "from batchspec.backends.automodel.upstream import load_upstream\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    for folder in PACKAGES:
        (tmp_path / folder).mkdir(exist_ok=True)
    found = violations(tmp_path)
    assert [line.split(": ")[0] for line in found] == [
        "backends/vectorized/convert.py:2",
        "conformance/helpers/stored.py:1",
        "golden/cases/convert.py:2",
        "reference/contract.py:2",
    ], found
    assert "batchspec.backends.vectorized.convert imports batchspec.bench: " in found[0]
    assert "batchspec.reference.contract imports batchspec.conformance: " in found[3]
