"""The ``automodel`` backend (docs/upstream.md, "Upstream through the suite"): upstream nemo-automodel
0.7.0's own functions, run through the conformance suite.

The run fails exactly the clauses ``EXPECTED_DIFFERENCES`` explains with a Decision, and
docs/upstream.md's results block is what that run gives. Needs upstream
(``pip install --no-deps nemo-automodel==0.7.0``); without it those tests are skipped with that
command, and only the check that the backend's import then says so runs. The suite run takes
about 15 s on 2 cores.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from _suite import ROOT

try:  # importing the loader imports the automodel backend, which loads upstream
    from batchspec.backends.automodel.upstream import load_upstream_modules

    UPSTREAM = load_upstream_modules()
    MISSING = ""
except ImportError as error:  # pragma: no cover - depends on the environment
    UPSTREAM, MISSING = None, str(error)

needs_upstream = pytest.mark.skipif(UPSTREAM is None, reason=MISSING or "nemo-automodel is installed")


def test_without_upstream_the_import_names_the_install_command():
    """``sys.modules["nemo_automodel"] = None`` hides an installed upstream from the import."""
    code = "import sys; sys.modules['nemo_automodel'] = None; import batchspec.backends.automodel"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ImportError" in done.stderr and "pip install --no-deps nemo-automodel==0.7.0" in done.stderr, done.stderr


@needs_upstream
def test_the_backend_is_upstreams_own_functions_and_declares_their_profiles():
    from batchspec.backends import automodel
    from batchspec.conformance.run.backends import load_backend

    packing, datum, utils = UPSTREAM.packing, UPSTREAM.datum, UPSTREAM.utils
    assert automodel.get_unpad_data is packing.get_unpad_data
    assert automodel.build_packed_sequence_metadata is packing.build_packed_sequence_metadata
    assert automodel.Datum is datum.Datum and automodel.collate_datums is datum.collate_datums
    assert automodel.default_collater is utils.default_collater
    assert automodel.packed_sequence_thd_collater is utils.packed_sequence_thd_collater
    assert automodel.pack_features_for_thd is utils.pack_features_for_thd
    backend = load_backend("automodel")
    assert backend.capabilities == {"unpad_data", "packed_metadata", "datum", "collaters"}
    assert backend.version == "0.7.0" and backend.spec_version == "1.1"


@needs_upstream
def test_the_suite_fails_exactly_the_explained_clauses_and_the_page_shows_the_run(automodel_run):
    """``automodel_run`` (tests/conftest.py) is docs/upstream.md's command, started in the background."""
    from batchspec import automodel_results as results
    from batchspec.backends.automodel import EXPECTED_DIFFERENCES

    run = automodel_run
    assert run.report, run.output[-3000:]
    problem = results.unexplained(run.report)
    assert problem is None, f"{problem}\n{run.output[-3000:]}"
    assert run.returncode == (1 if EXPECTED_DIFFERENCES else 0), run.output[-3000:]
    assert not run.report["verdict"]["incomplete"], run.report["verdict"]
    spec = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    for clause, (decision, _) in EXPECTED_DIFFERENCES.items():
        assert f'<a id="{decision.lower()}"></a>**{decision} (' in spec, f"{decision} has no anchor in SPEC.md"
        assert f"[{clause}]" in spec.split("## Decisions", 1)[1].split(f"**{decision} (", 1)[1].split("\n- ", 1)[0], (
            f"SPEC.md's {decision} does not name [{clause}] among the clauses it lands in"
        )
    current = results.section_of((ROOT / "docs" / "upstream.md").read_text(encoding="utf-8"))
    assert current == results.render(run.report), (
        "docs/upstream.md's automodel results are stale: run the commands in its 'Upstream through the suite'"
    )
