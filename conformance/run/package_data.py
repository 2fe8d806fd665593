"""Where golden files live and what they are called.

The golden data and SPEC.md are package data of the installed ``batchspec`` distribution,
found through ``importlib.resources`` (in a checkout, the editable install maps them to
``golden/`` and ``SPEC.md`` at the repository root; ``batchspec/SPEC.md`` links to it).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["CASES_DIR", "EXPECTED", "INDEX", "INPUTS", "RECORD", "REGENERATE", "ROOT", "SPEC", "TENSOR", "on_disk"]


def on_disk(resource) -> Path:
    """A package resource as a file-system path (pip installs batchspec unzipped, and
    safetensors and zephon read files by path).

    Raises:
        RuntimeError: the package is not on the file system (e.g. imported from a zip).
    """
    if not isinstance(resource, Path):
        raise RuntimeError(f"batchspec's package data must be on the file system, got {resource!r}")
    return resource


ROOT = on_disk(resources.files("batchspec.golden"))  # index.json and data/<case>/...
CASES_DIR = ROOT / "cases"  # the case definitions, golden/cases/<area>.py
SPEC = on_disk(resources.files("batchspec") / "SPEC.md")
INDEX = "index.json"
RECORD, INPUTS, EXPECTED = "record.json", "inputs.safetensors", "expected.safetensors"
TENSOR = "$tensor"  # marks a tensor in a JSON skeleton: {"$tensor": "<key in the safetensors file>"}
REGENERATE = "python -m batchspec.conformance.tools.goldens"
