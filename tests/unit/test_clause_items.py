"""Every enumerated item of every list clause of SPEC.md (``spec_clause_items``: the items
1., 2., … of [ctb-input-errors], [state-load-validates-first], …) has a check of its own: a
conformance test or a golden case that cites the item (``"ctb-input-errors.3"``), so that a
failure blames exactly that item (conformance/tools/clause_index.py ``item_citations``).

The suite is collected once for the module (never run); the planted gaps reuse that collection.
"""

from __future__ import annotations

import pytest
from _suite import ROOT

from batchspec.conformance.run.spec import SPEC_PATH, spec_clause_items
from batchspec.conformance.tools.clause_index import check_citations, item_citations, uncovered_items


@pytest.fixture(scope="module")
def citations() -> dict[str, set[str]]:
    """Citation as written -> the conformance tests and golden cases citing it (one collection)."""
    return check_citations(ROOT)


def test_every_enumerated_item_has_a_check_of_its_own(citations):
    index = item_citations(citations)
    assert index, "SPEC.md has no clause with enumerated items: spec_clause_items() found none"
    missing = uncovered_items(index)
    assert not missing, (
        f"{len(missing)} enumerated clause items that no check cites (cite one as "
        f"@pytest.mark.clause('<clause>.<n>') or in a golden case's clauses): {', '.join(missing)}"
    )


def test_a_check_citing_only_the_clause_covers_none_of_its_items(citations):
    index = item_citations(citations)
    # The golden runner's marks and whole-clause citations do not count for an item.
    assert all(
        not name.endswith("::test_golden_case") for by_item in index.values() for n in by_item.values() for name in n
    )
    assert "golden:test_rejects_empty_batch" in index["ctb-input-errors"][2]
    assert "conformance/test_convert.py::test_not_a_sample_batch_is_rejected" in index["ctb-input-errors"][1]


def test_a_planted_gap_is_reported(citations):
    """Removing every check of one item, or a SPEC with an item no check cites, is reported."""
    without = {cid: names for cid, names in citations.items() if cid != "ctb-input-errors.3"}
    assert uncovered_items(item_citations(without)) == ["ctb-input-errors.3"]
    # Citing only the clause (the item's checks moved to the clause id) leaves the gap too.
    moved = dict(without)
    moved["ctb-input-errors"] = set(citations["ctb-input-errors"]) | set(citations["ctb-input-errors.3"])
    assert uncovered_items(item_citations(moved)) == ["ctb-input-errors.3"]


def test_an_item_added_to_spec_without_a_check_is_reported(citations, tmp_path):
    text = SPEC_PATH.read_text(encoding="utf-8")
    last = "`n = L` leaves none).\n"
    assert text.count(last) == 1, "the planted item's anchor (ctb-input-errors item 12's last line) moved"
    planted = tmp_path / "SPEC.md"
    planted.write_text(text.replace(last, last + "  13. a planted fault → `ValueError`.\n"), encoding="utf-8")
    items = spec_clause_items(planted)
    assert items["ctb-input-errors"] == set(range(1, 14))
    assert uncovered_items(item_citations(citations, items)) == ["ctb-input-errors.13"]
