"""A pytest plugin (``-p tampered_golden``) that points the suite's golden store at another copy,
the folder named by ``$BATCHSPEC_PROBE_GOLDEN_ROOT`` (a tampered copy of golden/, made by the
test): what a golden store changed after release looks like to a run. pytest-xdist's workers
load it too (their arguments are the controller's). Without the variable it changes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from batchspec.conformance.golden import verified_read

_root = os.environ.get("BATCHSPEC_PROBE_GOLDEN_ROOT")
if _root:
    # every function of golden/verified_read.py defaults to the package's golden/; the planted copy replaces it
    for _function in (verified_read.load_index, verified_read.load_case, verified_read.load_all):
        defaults = list(_function.__defaults__ or ())
        _function.__defaults__ = tuple(Path(_root) if isinstance(d, Path) else d for d in defaults)
