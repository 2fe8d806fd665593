"""SPEC.md's own structure: version, clause ids, Conformance profiles, standalone sources."""

from __future__ import annotations

import re
import subprocess

from _suite import ROOT

from batchspec.conformance.run.backends import CAPABILITIES
from batchspec.conformance.run.interface import REQUIRED, SIGNATURES
from batchspec.conformance.run.spec import major, spec_clauses, spec_profiles, spec_raising_clauses, spec_version

SPEC = (ROOT / "SPEC.md").read_text(encoding="utf-8")


def test_spec_is_version_1_and_has_the_sections_a_standard_needs():
    assert spec_version() == "1.5" and major(spec_version()) == 1
    for heading in (
        "## How to read this document",
        "## Terms",
        "## Conformance",
        "## Versioning and compatibility",
        "## Decisions",
        "## Changelog",
    ):
        assert f"\n{heading}\n" in SPEC, f"SPEC.md lacks the section {heading!r}"
    assert "RFC 2119" in SPEC and "RFC 8174" in SPEC


def test_profiles_are_exactly_the_capabilities_and_cover_every_clause():
    profiles = spec_profiles()
    assert sorted(profiles) == sorted(CAPABILITIES), "SPEC.md's profile table and conformance/run/backends.py differ"
    clauses = spec_clauses()
    listed = {cid for ids in profiles.values() for cid in ids}
    assert not listed - set(clauses), f"profiles list unknown clauses: {sorted(listed - set(clauses))}"
    assert not set(clauses) - listed, f"clauses in no profile: {sorted(set(clauses) - listed)}"
    for name, ids in profiles.items():
        assert len(ids) == len(set(ids)), f"profile {name} lists a clause twice"


def test_no_must_clause_hides_a_recommendation_or_a_permission():
    """A MUST clause states requirements only: SHOULD and MAY get clauses (or notes) of their own."""
    bodies = re.split(r"\n- (?=(?:<a id=\"[a-z0-9-]+\"></a>)?\*\*\[)", SPEC)
    for body in bodies:
        head = re.match(r"(?:<a id=\"[a-z0-9-]+\"></a>)?\*\*\[([a-z0-9-]+)\]\*\*\s+(MUST|SHOULD)", body)
        if head and head.group(2) == "MUST":
            clause = body.split("\n\n")[0]
            assert not re.search(r"\bSHOULD\b|\bMAY\b", clause), f"[{head.group(1)}] mixes levels: {clause[:200]}"


def test_the_repository_stands_alone():
    """Nothing points at the notes the project was started from; sources are public links."""
    # The pattern is assembled so that this file does not match it itself.
    notes = [
        "shared" + "/",
        "automodel-contract" + r"\.md",
        "field-reports" + r"\.md",
        "zephon-api" + r"\.md",
        "seeds" + "/",
    ]
    found = subprocess.run(["git", "grep", "-nE", "|".join(notes)], cwd=ROOT, capture_output=True, text=True).stdout
    assert not found, f"references to files outside the repository:\n{found}"
    sources = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    assert "https://" in sources
    for fid in (f"F{n:02d}" for n in range(1, 19)):
        assert fid in sources, f"docs/sources.md does not restate field report {fid}"


def test_links_into_docs_sources_resolve():
    """Every ``docs/sources.md#anchor`` that SPEC.md or README.md cites has that anchor."""
    sources = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([a-z0-9-]+)"></a>', sources))
    for name in ("SPEC.md", "README.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for anchor in re.findall(r"docs/sources\.md#([a-z0-9-]+)", text):
            assert anchor in anchors, f"{name} links docs/sources.md#{anchor}, which has no such anchor"


def test_every_clause_has_an_anchor_to_link_to():
    """docs/clauses.md and other pages link a clause as SPEC.md#<id>."""
    for cid in spec_clauses():
        assert f'<a id="{cid}"></a>**[{cid}]**' in SPEC, f"[{cid}] has no anchor"


def test_the_cases_and_tests_docs_sources_names_exist():
    """Every ``conformance/<file>.py::<test>`` and golden case name docs/sources.md gives as
    pinning a field report exists, so the page cannot point at removed or renamed checks."""
    from batchspec.conformance.tools.goldens import all_cases

    sources = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    for path, test in set(re.findall(r"(conformance/[a-z_/]+\.py)::([A-Za-z0-9_]+)", sources)):
        module = ROOT / path
        assert module.exists(), f"docs/sources.md names {path}, which does not exist"
        assert re.search(rf"^def {test}\(", module.read_text(encoding="utf-8"), re.M), (
            f"docs/sources.md names {path}::{test}, which does not exist"
        )
    cases = {case.name for case in all_cases()}
    named = set(re.findall(r"`(test_[a-z0-9_]+)`", sources))
    tests = {test for _, test in re.findall(r"(conformance/[a-z_/]+\.py)::([A-Za-z0-9_]+)", sources)}
    stale = sorted(named - cases - tests)
    assert not stale, f"docs/sources.md names golden cases that do not exist: {stale}"


def _section(heading: str) -> str:
    return SPEC.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_conformance_section_names_no_fixed_version():
    """Conformance is stated for the document's own version (its top line), so a minor release
    never leaves a stale "conformant to batchspec 1.0" behind."""
    conformance = _section("## Conformance")
    assert "conformant to this version of batchspec" in conformance
    assert not re.search(r"batchspec \d+\.\d+", conformance), re.findall(r"batchspec \d+\.\d+", conformance)


def test_the_format_defaults_of_the_signature_table_are_the_ones_types_output_format_names():
    """[types-output-format] names the functions whose format parameter has a default (that
    default is "batched") and the one without; the [api-signatures] table agrees."""
    clause = SPEC.split('id="types-output-format"', 1)[1].split("\n- <a id=", 1)[0]
    defaults = {
        name: default
        for name, (_, parameters) in SIGNATURES.items()
        for parameter, _, default in parameters
        if parameter == "output_format"
    }
    assert defaults == {
        "convert_text_batch": "batched",
        "convert_batch_output": REQUIRED,
        "ZephonDataLoader": "batched",
    }
    for name in defaults:
        assert f"`{name}`" in clause, f"[types-output-format] does not say which default {name}'s format has"


def test_every_function_of_the_contract_has_the_clause_that_lists_its_faults():
    """SPEC's "Raising on a valid input" pairs each contract function with the error clause the
    suite blames when it raises on a valid input; every pair names a SPEC clause and a function
    of the [api-signatures] table."""
    raising = spec_raising_clauses()
    clauses = spec_clauses()
    functions = {name for name in SIGNATURES if name[0].islower() and "." not in name}
    assert set(raising) == functions, sorted(set(raising) ^ functions)
    assert all(clause in clauses for clause in raising.values()), raising
