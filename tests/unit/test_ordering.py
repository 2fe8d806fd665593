"""The tiers and the order of conformance/run/ordering.py (cheap checks first), on paths alone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from batchspec.conformance.run.ordering import GOLDENS, MODEL, PROPERTIES, SECTIONS, cheap_checks_first, tier

SUITE = Path(__file__).resolve().parents[2] / "conformance"


def test_the_tiers_of_the_suites_folders():
    assert tier(SUITE / "test_goldens.py", SUITE) == GOLDENS
    assert tier(SUITE / "test_convert.py", SUITE) == SECTIONS
    assert tier(SUITE / "properties" / "test_convert_invariants.py", SUITE) == PROPERTIES
    assert tier(SUITE / "model" / "test_model_equivalence.py", SUITE) == MODEL
    assert tier(Path("/elsewhere/test_x.py"), SUITE) == SECTIONS


def test_the_order_is_by_tier_and_stable_inside_one():
    files = ["model/test_m.py", "test_b.py", "properties/test_p.py", "test_goldens.py", "test_a.py", "model/test_n.py"]
    items = [SimpleNamespace(path=SUITE / f, name=f"{f}-{i}") for i, f in enumerate(files * 2)]
    ordered = [item.name for item in cheap_checks_first(items, SUITE)]
    expected = [f"{f}-{i}" for i, f in enumerate(files * 2)]
    by_tier = sorted(expected, key=lambda n: (tier(SUITE / n.rsplit("-", 1)[0], SUITE), expected.index(n)))
    assert ordered == by_tier
