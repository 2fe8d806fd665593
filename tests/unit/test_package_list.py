"""pyproject.toml's ``[tool.setuptools] packages`` list, the one hand-kept part of how the top-level
folders install as ``batchspec.<folder>`` (CONTRIBUTING.md, "Import paths"): it names every
package of those folders (a folder with an ``__init__.py``), so none is left out of the wheel,
and nothing else. A folder with a ``pyproject.toml`` of its own (``backends/native``) is a
distribution of its own, not part of the list."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def packages_on_disk(root: Path, package_dir: dict[str, str]) -> set[str]:
    """The dotted names of the packages under ``package_dir``'s folders (and ``batchspec``), as
    they install; none under a folder that has a ``pyproject.toml`` of its own."""
    found = {"batchspec"} if (root / "batchspec" / "__init__.py").is_file() else set()
    for name, folder in package_dir.items():
        for init in sorted((root / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(root / folder).parts
            inside = [root / folder / Path(*parts[:end]) for end in range(1, len(parts) + 1)]
            if any((path / "pyproject.toml").is_file() for path in inside):
                continue
            found.add(".".join([name, *parts]))
    return found


def listing_problems(root: Path) -> list[str]:
    setuptools = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed, on_disk = set(setuptools["packages"]), packages_on_disk(root, setuptools["package-dir"])
    return [f"{name}: a package not in [tool.setuptools] packages" for name in sorted(on_disk - listed)] + [
        f"{name}: listed in [tool.setuptools] packages, no such package" for name in sorted(listed - on_disk)
    ]


def test_the_packages_list_names_every_package():
    assert listing_problems(ROOT) == []


def test_a_package_left_out_of_the_list_is_reported(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackages = ["batchspec", "batchspec.conformance", "batchspec.conformance.gone"]\n'
        '[tool.setuptools.package-dir]\n"batchspec.conformance" = "conformance"\n"batchspec.backends" = "backends"\n',
        encoding="utf-8",
    )
    for package in ("batchspec", "conformance", "conformance/run", "backends/own", "backends/own/inner"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "backends" / "own" / "pyproject.toml").write_text("", encoding="utf-8")
    assert listing_problems(tmp_path) == [
        "batchspec.conformance.run: a package not in [tool.setuptools] packages",
        "batchspec.conformance.gone: listed in [tool.setuptools] packages, no such package",
    ]
