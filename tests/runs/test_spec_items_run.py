"""A conformance module citing SPEC's enumerated items (``[clause.N]``): known items are collected,
an unknown item stops collection (the run of ``tests/unit/test_spec.py``).
"""

from __future__ import annotations

from _suite import ROOT


def test_enumerated_items_can_be_cited_and_unknown_items_stop_collection(tmp_path):
    """``ctb-input-errors.3`` cites item 3; the clause summary aggregates items under their
    clause; a citation of an item the clause does not have is a usage error."""
    from batchspec.conformance.run.spec import spec_clause_items, split_citation

    items = spec_clause_items()
    assert items["ctb-input-errors"] == set(range(1, 13))
    assert items["state-load-validates-first"] == set(range(1, 8))
    assert items["ctb-shift"] == set()
    assert split_citation("contract-validation.4") == ("contract-validation", 4)
    assert split_citation("ctb-shift") == ("ctb-shift", None)

    from _suite import run_conformance

    module = tmp_path / "test_bad_item.py"
    module.write_text(
        "import pytest\n\n"
        "@pytest.mark.requires('contract_types')\n"
        "@pytest.mark.clause('contract-validation.9')\n"
        "def test_cites_a_missing_item(backend):\n    pass\n",
        encoding="utf-8",
    )
    target = ROOT / "conformance" / "test_zz_bad_item_probe.py"
    target.write_text(module.read_text(encoding="utf-8"), encoding="utf-8")
    try:
        run = run_conformance(tmp_path, str(target.relative_to(ROOT)), "--backend=reference")
    finally:
        target.unlink()
    assert run.returncode == 4, run.output[-2000:]
    assert "clause 'contract-validation' has no item 9 (its items: [1, 2, 3, 4, 5, 6])" in run.output
