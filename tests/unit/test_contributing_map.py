"""CONTRIBUTING.md's "Map of conformance/" names every module of ``conformance/`` (issue 34):
each module that is not a test is named in its folder's bullet (``- `run/`: ...``; the top
level's is ``- top level: ...``), and each test module of the top level is named somewhere in
CONTRIBUTING.md (the "Names" table or the map). A subfolder's ``__init__.py`` and its test
modules are covered by their folder's bullet (``properties/``: ``test_<word>_<kind>.py``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP_HEADING = "## Map of conformance/"


def map_bullets(contributing: str) -> dict[str, str]:
    """The map's bullets by folder (``""`` for the top level, else ``run``, ``golden``, ...)."""
    start = contributing.index(MAP_HEADING)
    end = contributing.find("\n## ", start + len(MAP_HEADING))
    section = contributing[start : end if end != -1 else len(contributing)]
    bullets = {}
    for bullet in re.split(r"\n- ", section)[1:]:
        folder = re.match(r"`([\w/]+)/`", bullet)
        if folder:
            bullets[folder.group(1)] = bullet
        elif bullet.startswith("top level"):
            bullets[""] = bullet
    return bullets


def unmapped(suite: Path, contributing: str) -> list[str]:
    """The modules of ``suite`` (a ``conformance/`` folder) the map does not name, as paths
    relative to it."""
    bullets = map_bullets(contributing)
    missing = []
    for path in sorted(suite.rglob("*.py")):
        relative = path.relative_to(suite)
        folder = "/".join(relative.parts[:-1])
        named = f"`{path.name}`"
        if (path.name.startswith("test_") or path.name == "__init__.py") and folder:
            ok = folder in bullets
        elif path.name.startswith("test_"):
            ok = named in contributing
        else:
            ok = named in bullets.get(folder, "")
        if not ok:
            missing.append(relative.as_posix())
    return missing


def test_the_map_names_every_module_of_conformance():
    missing = unmapped(ROOT / "conformance", (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert missing == [], f"CONTRIBUTING.md's {MAP_HEADING!r} does not name: {missing}"


def test_a_module_left_out_of_the_map_is_reported(tmp_path):
    for name in ("__init__.py", "test_x.py", "run/__init__.py", "run/plugin.py", "run/new.py", "properties/test_p.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    text = f"{MAP_HEADING}\n\n- top level: `__init__.py`, `test_x.py`\n- `run/`: `__init__.py`, `plugin.py` (and `new.py` is not here)\n"
    assert unmapped(tmp_path, text + "\n## Next\n\n- `run/`: `new.py`\n") == ["properties/test_p.py"]
    assert unmapped(tmp_path, text.replace(" (and `new.py` is not here)", "") + "- `properties/`: tests\n") == [
        "run/new.py"
    ]
