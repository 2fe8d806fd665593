"""Cheap checks first (conformance/run/ordering.py): the suite collects the golden cases, then the
section modules, then the hypothesis properties, then the slow model-level checks, so that
``-x`` and a report's first failure point to the cheapest reproduction."""

from __future__ import annotations

import subprocess
import sys

from _suite import ROOT

from batchspec.conformance.run.ordering import GOLDENS, MODEL, PROPERTIES, tier

SUITE = ROOT / "conformance"


def test_the_suite_collects_model_checks_last_and_keeps_the_multirank_scenarios_together():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance", "--backend=reference", "--collect-only", "-q"]
        + ["-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert done.returncode == 0 and ids, done.stdout[-2000:] + done.stderr[-2000:]
    tiers = [tier(ROOT / i.split("::")[0], SUITE) for i in ids]
    assert tiers == sorted(tiers), [i for i, t in zip(ids, tiers) if t == MODEL][:1]
    assert tiers[0] == GOLDENS and tiers[-1] == MODEL and PROPERTIES in tiers
    # the multi-rank scenarios (xdist_group per launcher) stay one block, in collection order
    ranks = [n for n, i in enumerate(ids) if i.startswith("conformance/test_checkpoint_ranks.py::")]
    assert ranks and ranks == list(range(ranks[0], ranks[0] + len(ranks)))
