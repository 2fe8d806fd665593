"""The records of the contract's functions (conformance/run/functions.py) against SPEC.md, and the
tables and the backend guide's table derived from them."""

from __future__ import annotations

from batchspec.conformance.golden.adapters import ADAPTERS
from batchspec.conformance.golden.discovery import all_cases
from batchspec.conformance.golden.key_blame import KEY_SET_CLAUSES, OUTPUT_CLAUSES
from batchspec.conformance.run import functions
from batchspec.conformance.run.backends import CAPABILITIES
from batchspec.conformance.run.device import PLACED_FUNCTIONS
from batchspec.conformance.run.functions import BY_TENSORS, BY_TOKEN_FIELDS, CONSTANTS, FUNCTIONS
from batchspec.conformance.run.interface import SIGNATURES
from batchspec.conformance.run.spec import (
    spec_clauses,
    spec_profile_covers,
    spec_profiles,
    spec_raising_clauses,
    spec_signatures,
)


def test_the_records_are_exactly_the_rows_of_api_signatures():
    signatures = spec_signatures()
    assert list(FUNCTIONS) == list(signatures), "conformance/run/functions.py and SPEC's [api-signatures] table differ"
    for name, record in FUNCTIONS.items():
        assert record.name == name
        assert record.profile == signatures[name][1]
    assert not set(CONSTANTS) & set(signatures), "a contract constant is a row of [api-signatures]"


def test_every_function_of_raising_on_a_valid_input_has_a_record():
    raising = spec_raising_clauses()
    assert not set(raising) - set(FUNCTIONS), f"no record: {sorted(set(raising) - set(FUNCTIONS))}"
    assert {n: r.raising_clause for n, r in FUNCTIONS.items() if r.raising_clause} == raising


def test_every_clause_a_record_names_is_a_clause_of_spec_in_its_capabilities_profiles():
    clauses, profiles = spec_clauses(), spec_profiles()
    for name, record in FUNCTIONS.items():
        named = {c for ids in record.output_clauses.values() for c in ids}
        named |= set(record.key_set_clauses) | set(record.no_mutation) | set(record.signature_clauses)
        assert not named - set(clauses), f"{name}: unknown clauses {sorted(named - set(clauses))}"
        covered = {c for capability in record.capabilities for c in profiles[capability]}
        assert not named - covered, f"{name}: clauses in none of its profiles {sorted(named - covered)}"


def test_every_capability_a_record_names_is_a_profile_of_spec():
    profiles = spec_profiles()
    for record in (*FUNCTIONS.values(), *CONSTANTS.values()):
        extra = {c for g in record.goldens for c in g.needs}
        extra |= {o.capability for g in record.goldens for o in g.option_capabilities}
        unknown = (set(record.capabilities) | extra) - set(profiles)
        assert not unknown, f"{record.name}: unknown capabilities {sorted(unknown)}"


def test_every_profile_that_covers_a_function_needs_a_name():
    """A profile whose row in SPEC's table covers a function has names a backend must export
    (else a backend without declarations would be assumed to implement it)."""
    for capability, (_, needed) in CAPABILITIES.items():
        assert needed, f"capability {capability!r}: no record names it"
        assert set(needed) <= {r.export for r in (*FUNCTIONS.values(), *CONSTANTS.values())}


def test_the_device_placement_is_one_of_the_two_rules():
    assert {r.device for r in FUNCTIONS.values()} <= {None, BY_TENSORS, BY_TOKEN_FIELDS}
    assert PLACED_FUNCTIONS == {n for n, r in FUNCTIONS.items() if r.device is not None}
    # a placed function must be reachable through Backend.__getattr__: its export is the name
    assert all(FUNCTIONS[n].export == n for n in PLACED_FUNCTIONS)


def test_the_golden_tables_are_the_records():
    targets = [g.target for r in (*FUNCTIONS.values(), *CONSTANTS.values()) for g in r.goldens]
    assert len(targets) == len(set(targets)), "two records claim one golden target"
    assert set(ADAPTERS) == set(targets)
    for record in FUNCTIONS.values():
        # a function's own golden target is its name; a further one names it first
        assert all(g.target == record.name or g.target.startswith(f"{record.name}.") for g in record.goldens)
        assert all(ADAPTERS[g.target].capabilities[0] == record.profile for g in record.goldens)
    assert OUTPUT_CLAUSES == {n: dict(r.output_clauses) for n, r in FUNCTIONS.items() if r.output_clauses}
    assert KEY_SET_CLAUSES == {n: r.key_set_clauses for n, r in FUNCTIONS.items() if r.key_set_clauses}


def test_every_golden_case_names_a_target_of_a_record():
    targets = {g.target for r in (*FUNCTIONS.values(), *CONSTANTS.values()) for g in r.goldens}
    named = {case.function for case in all_cases()}
    assert not named - targets, f"golden cases name targets no record has: {sorted(named - targets)}"
    assert not targets - named, f"golden targets no case uses: {sorted(targets - named)}"


def test_the_backend_guide_lists_the_records():
    current = functions.table_section(functions.GUIDE.read_text(encoding="utf-8"))
    assert current == functions.render_table(), "run python -m batchspec.conformance.run.functions --write"


def test_the_check_command_agrees():
    assert functions.main(["--check"]) == 0


def test_the_signature_and_capability_tables_are_derived_from_their_one_home():
    """The signature check's further clauses (``signature_clauses``, once ``EXTRA_CLAUSES``), ``interface.SIGNATURES`` and
    ``backends.CAPABILITIES`` read the records and SPEC's tables (issue 34), and still hold what
    they restated by hand before."""
    assert {n: r.signature_clauses for n, r in FUNCTIONS.items() if r.signature_clauses} == {
        "collate_datums": ("collate-keyword-only",),
        "Datum.to_features": ("collate-keyword-only", "datum-to-features"),
        "ZephonDataLoader": ("loader-construct-validates",),
    }
    assert list(SIGNATURES) == list(spec_signatures())
    assert {name: profile for name, (profile, _) in SIGNATURES.items()} == {
        name: profile for name, (_, profile) in spec_signatures().items()
    }
    assert [p for p, *_ in SIGNATURES["collate_datums"][1]] == [
        "datums",
        "packed",
        "pad_seq_len_divisible",
        "ignore_index",
    ]
    assert {name: covers for name, (covers, _) in CAPABILITIES.items()} == spec_profile_covers()
    assert sorted(CAPABILITIES) == sorted(
        ("contract_types", "unpad_data", "packed_metadata", "adapt_model_inputs", "convert_text_batch", "zephon_loader")
        + ("zephon_state", "zephon_state_multirank", "xdoc", "thd", "unpacked", "convert_batch_output", "datum")
        + ("collaters",)
    )
    assert CAPABILITIES["thd"] == ('convert_text_batch(output_format="thd")', ("convert_text_batch",))
    assert CAPABILITIES["datum"] == ("Datum, Datum.to_features, collate_datums", ("Datum", "collate_datums"))
