"""Discovery: every ``case_*`` function of ``golden/cases/*.py``, called, its cases checked
(names unique and ``test_``-prefixed, ``source`` a non-empty string when given) and stamped
with where they were defined (``Case.generator``)."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

from batchspec.conformance.golden.api import Case
from batchspec.conformance.golden.errors import GoldenError
from batchspec.conformance.run.package_data import CASES_DIR

__all__ = ["all_cases", "case_modules"]


def case_modules(cases_dir: Path = CASES_DIR) -> list[Path]:
    """The case modules, by file name; a name starting with ``_`` is not one."""
    return [path for path in sorted(cases_dir.glob("*.py")) if not path.name.startswith("_")]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"golden_cases_{path.stem}", path)
    assert spec is not None and spec.loader is not None  # a .py file always gets a source loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def all_cases(cases_dir: Path = CASES_DIR) -> list[Case]:
    """Every ``case_*`` of ``golden/cases/*.py``, in file then definition order. Names must
    be unique and start with ``test_``."""
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in case_modules(cases_dir):
        module = _load(path)
        functions = [(n, f) for n, f in vars(module).items() if n.startswith("case_") and callable(f)]
        functions.sort(key=lambda item: inspect.getsourcelines(item[1])[1])
        for fname, function in functions:
            made = function()
            for case in made if isinstance(made, list) else [made]:
                where = f"golden/cases/{path.name}::{fname}"
                if not case.name.startswith("test_"):
                    raise GoldenError(f"{where}: case name {case.name!r} must start with 'test_'")
                if case.name in seen:
                    raise GoldenError(f"{where}: duplicate case name {case.name!r} (also in {seen[case.name]})")
                if case.source is not None and (not isinstance(case.source, str) or not case.source):
                    raise GoldenError(f"{where}: case {case.name!r} has source {case.source!r}; a source is an id")
                seen[case.name] = where
                cases.append(dataclasses.replace(case, generator=where))
    return cases
