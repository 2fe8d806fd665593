"""Where golden files live and what they are called (``golden/`` at the repository root)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CASES_DIR", "EXPECTED", "INDEX", "INPUTS", "RECORD", "REGENERATE", "REPO", "ROOT", "SPEC", "TENSOR"]

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "golden"  # index.json and data/<case>/...
CASES_DIR = ROOT / "cases"  # the case definitions, golden/cases/<area>.py
SPEC = REPO / "SPEC.md"
INDEX = "index.json"
RECORD, INPUTS, EXPECTED = "record.json", "inputs.safetensors", "expected.safetensors"
TENSOR = "$tensor"  # marks a tensor in a JSON skeleton: {"$tensor": "<key in the safetensors file>"}
REGENERATE = "python -m conformance.goldens"
