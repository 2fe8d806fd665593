"""Golden files: the only code that reads or writes ``golden/data`` and ``golden/index.json``
(the package ``batchspec.conformance.golden``; this module re-exports its public names and runs its
commands).

A golden case is defined once, in ``golden/cases/<area>.py``, as a function ``case_<name>()``
returning a ``Case`` (``batchspec.conformance.golden.api``). A case with ``expected`` (or ``error``) is
*canon*: its expected values are hand-written literals, and the reference must agree with them
or generation fails. A case without is *generated*: its expected values come from the reference.

On disk each case is ``golden/data/<name>/{record.json,inputs.safetensors,expected.safetensors}``
and ``golden/index.json`` maps every file to its sha256. Loading checks that a file is indexed
and that its sha256 matches *before* parsing it, parses tensors with
``safetensors.torch.load`` and records with ``json.loads`` (never pickle), and rejects any file
under ``golden/data`` that the index does not list.

Commands::

    python -m batchspec.conformance.tools.goldens                # regenerate every case, rewrite the index
    python -m batchspec.conformance.tools.goldens --check        # regenerate in memory; exit 1 on any difference
    python -m batchspec.conformance.tools.goldens --render-spec  # rewrite SPEC.md's <!-- golden:NAME --> blocks
"""

from __future__ import annotations

import sys

from batchspec.conformance.golden.adapters import call, capabilities_of
from batchspec.conformance.golden.api import Case, text_batch_inputs
from batchspec.conformance.golden.build import build_files
from batchspec.conformance.golden.commands import check, main, regenerate
from batchspec.conformance.golden.discovery import all_cases
from batchspec.conformance.golden.errors import GoldenError
from batchspec.conformance.golden.render import render_case, render_spec
from batchspec.conformance.golden.runner import run_stored_case
from batchspec.conformance.golden.verified_read import StoredCase, load_all, load_case
from batchspec.conformance.run.package_data import ROOT, SPEC

__all__ = [
    "ROOT",
    "SPEC",
    "Case",
    "GoldenError",
    "StoredCase",
    "all_cases",
    "build_files",
    "call",
    "capabilities_of",
    "check",
    "load_all",
    "load_case",
    "main",
    "regenerate",
    "render_case",
    "render_spec",
    "text_batch_inputs",
    "run_stored_case",
]

if __name__ == "__main__":
    sys.exit(main())
