"""The ``clause`` and ``requires`` markers, and the check that every conformance test cites
known SPEC clauses of the profiles it requires (run at collection, conformance/run/plugin.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchspec.conformance.run.backends import CAPABILITIES
from batchspec.conformance.run.spec import SPEC_PATH, spec_clause_items, spec_clauses, spec_profiles, split_citation

__all__ = ["MARKERS", "citation_problems", "cited_clauses"]

MARKERS = (
    "clause(*ids): the SPEC.md clause ids a conformance test checks ('id' or one enumerated item 'id.N')",
    "requires(*capabilities): the conformance profiles (capabilities) a test needs",
)


def cited_clauses(item: pytest.Item) -> list[str]:
    """The clause ids ``item`` cites (an enumerated item ``id.N`` counts as ``id``), once each."""
    return list(dict.fromkeys(split_citation(cid)[0] for mark in item.iter_markers("clause") for cid in mark.args))


def citation_problems(items: list[pytest.Item], suite: Path) -> list[str]:
    """One line per problem of the tests under ``suite`` among ``items``: no ``clause`` mark, an
    unknown clause, an item number the clause does not have, an unknown capability, or a clause
    in none of the profiles the test requires (a test checks clauses of the profiles it
    requires, SPEC.md "Conformance", so a backend that declares none of them is never judged
    on it). Without SPEC.md, only the missing marks and unknown capabilities."""
    known = spec_clauses() if SPEC_PATH.exists() else None
    profiles = spec_profiles() if SPEC_PATH.exists() else None
    numbered = spec_clause_items() if SPEC_PATH.exists() else {}
    problems = []
    for item in items:
        if not Path(str(item.path)).resolve().is_relative_to(suite):
            continue
        citations = [cid for mark in item.iter_markers("clause") for cid in mark.args]
        # A citation is a clause id, or one enumerated item of it: "ctb-input-errors.3".
        ids = [split_citation(cid)[0] for cid in citations]
        if not ids:
            problems.append(f"{item.nodeid}: no @pytest.mark.clause(...)")
        elif known is not None:
            problems.extend(f"{item.nodeid}: unknown clause {cid!r}" for cid in ids if cid not in known)
            problems.extend(
                f"{item.nodeid}: clause {cid!r} has no item {number} (its items: {sorted(numbered.get(cid, ())) or 'none'})"
                for cid, number in map(split_citation, citations)
                if cid in known and number is not None and number not in numbered.get(cid, ())
            )
        for mark in item.iter_markers("requires"):
            problems.extend(
                f"{item.nodeid}: unknown capability {cap!r}" for cap in mark.args if cap not in CAPABILITIES
            )
        required = [cap for mark in item.iter_markers("requires") for cap in mark.args]
        if profiles is not None:
            problems.extend(
                f"{item.nodeid}: clause {cid!r} is in none of the profiles it requires {required}"
                for cid in ids
                if not any(cid in profiles.get(cap, ()) for cap in required)
            )
    return problems
