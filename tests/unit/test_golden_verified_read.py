"""The golden files' safety properties (issue #5): the committed tree is current, tampered
or unindexed files are rejected with an error naming the file, pickle is never loaded,
canon is never regenerated, at least 150 cases load, and every MUST clause is covered."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from pathlib import Path

import pytest

from batchspec.conformance.run.spec import spec_clause_items, spec_clauses, split_citation
from batchspec.conformance.tools import goldens
from batchspec.conformance.tools.goldens import GoldenError, load_all

REPO = Path(__file__).resolve().parents[2]
MIN_CASES = 150

# MUST clauses that no golden case can express, each with the reason. The ZephonDataLoader
# clauses, the real-data scenario and the single-process checkpoint state (SPEC.md sections 9, 12, 10) are
# golden cases of golden/cases/loader.py and golden/cases/checkpoint.py; the multi-rank clauses (section 11)
# need several rank processes and a launcher, which a stored case cannot provide.
MULTIRANK_REASON = (
    "needs real rank processes; conformance/test_checkpoint_ranks.py runs it under mpiexec and torch.distributed"
)
EXEMPT_CLAUSES: dict[str, str] = {
    "state-all-ranks-identical": MULTIRANK_REASON,
    "state-collective-all-ranks": MULTIRANK_REASON,
    "state-collective-timeout": MULTIRANK_REASON,
    "state-elastic-resume": MULTIRANK_REASON,
    "state-multirank-resume": MULTIRANK_REASON,
    "state-tp-peers": MULTIRANK_REASON,
    # Properties of live objects that a stored case (values, dtypes, shapes) cannot hold:
    "tb-device": "device placement of live tensors; conformance tests check it on the inputs' device",
    "tb-no-aliasing": "storage sharing between live tensors; conformance tests compare storages",
    "tb-layout": "the memory layout of live tensors (a stored tensor is contiguous); conformance/test_layouts.py "
    "lays each input out",
    "api-signatures": "a property of live callables (inspect.signature); conformance/test_contract_signatures.py checks it",
    "collaters-no-mutation": "mutation of the caller's live objects; conformance/test_collaters.py "
    "snapshots them around each call",
}


def _some_file(root: Path, name: str = "expected.safetensors") -> Path:
    return root / "data" / "test_example_a_defaults" / name


def test_at_least_150_cases_load_through_the_verified_path():
    cases = load_all()
    assert len(cases) >= MIN_CASES, f"{len(cases)} golden cases, but should be at least {MIN_CASES}"
    kinds = {c.record["kind"] for c in cases}
    assert kinds == {"canon", "generated"}, kinds


def test_every_must_clause_is_covered_by_a_golden_case():
    cited = {citation for case in load_all() for citation in case.clauses}
    items = spec_clause_items()
    bad_items = sorted(c for c in cited if split_citation(c)[1] not in items.get(split_citation(c)[0], set()) | {None})
    assert not bad_items, f"golden cases cite enumerated items their clause does not have: {bad_items}"
    covered = {split_citation(citation)[0] for citation in cited}  # an item "id.N" covers its clause "id"
    known = spec_clauses()
    unknown = sorted(covered - set(known))
    assert not unknown, f"golden cases cite clauses SPEC.md does not define: {unknown}"
    assert set(EXEMPT_CLAUSES) <= set(known), sorted(set(EXEMPT_CLAUSES) - set(known))
    missing = sorted(c for c, level in known.items() if level == "MUST" and c not in covered | set(EXEMPT_CLAUSES))
    assert not missing, f"MUST clauses with no golden case and no exemption: {missing}"
    needless = sorted(set(EXEMPT_CLAUSES) & covered)
    assert not needless, f"exempt clauses that golden cases now cover (drop the exemption): {needless}"


def test_a_flipped_byte_is_rejected(golden_copy):
    path = _some_file(golden_copy)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(GoldenError, match=r"test_example_a_defaults/expected\.safetensors: sha256 .* does not match"):
        load_all(golden_copy)


def test_a_truncated_file_is_rejected(golden_copy):
    path = _some_file(golden_copy, "record.json")
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(GoldenError, match=r"test_example_a_defaults/record\.json: sha256 .* does not match"):
        load_all(golden_copy)


def test_an_extra_unindexed_file_is_rejected(golden_copy):
    (golden_copy / "data" / "test_example_a_defaults" / "extra.safetensors").write_bytes(b"{}")
    with pytest.raises(GoldenError, match=r"test_example_a_defaults/extra\.safetensors: file is not in golden/index"):
        load_all(golden_copy)


class _Boom:
    """A pickle payload that would record its execution if it were ever unpickled."""

    def __reduce__(self):
        return (Path.touch, (Path("/nonexistent-dir-batchspec/PICKLE-EXECUTED"),))


def test_an_unindexed_pickle_payload_is_rejected_without_unpickling(golden_copy):
    payload = pickle.dumps({"input_ids": _Boom()})
    (golden_copy / "data" / "test_example_a_defaults" / "evil.pt").write_bytes(payload)
    with pytest.raises(GoldenError, match=r"evil\.pt: file is not in golden/index"):
        load_all(golden_copy)


def test_an_indexed_pickle_payload_with_a_matching_hash_is_rejected(golden_copy, monkeypatch):
    """Even a pickle that an attacker also put in the index fails as unparsable safetensors;
    pickle and torch.load are never called."""
    path = _some_file(golden_copy, "inputs.safetensors")
    payload = pickle.dumps({"rows.0.tokens": _Boom()})
    path.write_bytes(payload)
    index_path = golden_copy / "index.json"
    index = json.loads(index_path.read_text())
    index["files"]["data/test_example_a_defaults/inputs.safetensors"] = hashlib.sha256(payload).hexdigest()
    index_path.write_text(json.dumps(index))

    def forbidden(*args, **kwargs):
        raise AssertionError("golden loading called pickle/torch.load")

    import torch

    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(torch, "load", forbidden)
    with pytest.raises(GoldenError, match=r"test_example_a_defaults/inputs\.safetensors: not a valid safetensors"):
        load_all(golden_copy)


def test_a_missing_indexed_file_is_rejected(golden_copy):
    _some_file(golden_copy, "record.json").unlink()
    with pytest.raises(GoldenError, match=r"test_example_a_defaults/record\.json: indexed but missing"):
        load_all(golden_copy)


def test_canon_is_never_overwritten(tmp_path):
    """A reference that disagrees with a canon case raises before anything is written."""
    cases = goldens.all_cases()
    canon = next(c for c in cases if c.name == "test_example_a_defaults")
    wrong = dict(canon.expected)
    wrong["labels"] = wrong["labels"].clone()
    wrong["labels"][0, 0] = 999
    tampered = [dataclasses.replace(c, expected=wrong) if c is canon else c for c in cases]
    root = tmp_path / "golden"
    with pytest.raises(GoldenError, match=r"canon case .*test_example_a_defaults.*disagrees"):
        goldens.regenerate(root, tampered)
    assert not root.exists(), "regenerate wrote files although a canon case disagreed with the reference"


def _thd_loader_case_with_ragged_rows() -> goldens.Case:
    """test_loader_thd_stream as it once was: rows of two lengths in one SampleBatch, so the
    reference raised on the first batch and THD output never flowed through the loader."""
    stream = next(c for c in goldens.all_cases() if c.name == "test_loader_thd_stream")
    first = stream.inputs["batches"][0]
    ragged = [first[0], {**first[1], "tokens": first[1]["tokens"][:-1], "positions": first[1]["positions"][:-1]}]
    return dataclasses.replace(stream, inputs={"batches": [ragged, *stream.inputs["batches"][1:]]})


def test_a_generated_case_whose_reference_run_raises_is_refused(tmp_path):
    """A generated scripted case that records an error it did not declare (expects_error) is
    refused with a GoldenError naming the case, and nothing is written."""
    case = _thd_loader_case_with_ragged_rows()
    assert case.kind == "generated" and not case.expects_error
    root = tmp_path / "golden"
    with pytest.raises(GoldenError, match=r"generated case .*test_loader_thd_stream.*raised .*ValueError"):
        goldens.regenerate(root, [case])
    assert not root.exists()
    declared = dataclasses.replace(case, expects_error=True)
    files = goldens.build_files(declared, "1.0")
    record = json.loads(files["data/test_loader_thd_stream/record.json"])
    assert record["expected"]["outcomes"][0] == {"raised": "ValueError", "same_exception": False}
    stream = next(c for c in goldens.all_cases() if c.name == "test_loader_thd_stream")
    with pytest.raises(GoldenError, match=r"test_loader_thd_stream.*declares expects_error=True, but"):
        goldens.build_files(dataclasses.replace(stream, expects_error=True), "1.0")


def test_the_thd_stream_case_sends_thd_batches_through_the_loader():
    case = next(c for c in load_all() if c.name == "test_loader_thd_stream")
    outcomes = case.expected["outcomes"]
    assert [o if isinstance(o, str) else o.get("qkv_format") for o in outcomes] == ["thd", "thd", "StopIteration"]


def test_no_golden_record_pins_an_error_message():
    """Errors are stored as a type and facts (canon ``error``) or as a type and whether it is the
    injected exception (scripted outcomes); never as message text (SPEC 1.0)."""

    def messages(value, path):
        if isinstance(value, dict):
            if "raised" in value:
                assert set(value) <= {"raised", "same_exception", "check", "names"}, f"{path}: {value}"
            for key, item in value.items():
                messages(item, f"{path}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                messages(item, f"{path}[{i}]")

    for case in load_all():
        messages(case.record["expected"], case.name)
        if case.record["error"] is not None:
            assert set(case.record["error"]) == {"type", "facts"}, case.name


def test_the_index_records_the_spec_version():
    from batchspec.conformance.run.spec import spec_version

    index = json.loads((goldens.ROOT / "index.json").read_text())
    assert index["spec_version"] == spec_version()
    assert not hasattr(goldens, "spec_version") or goldens.spec_version is spec_version


def test_case_modules_import_only_the_public_case_api():
    """golden/cases/*.py import nothing underscore-prefixed from the suite: what they need is
    public in conformance.golden.api."""
    import ast

    private = []
    for path in sorted((goldens.ROOT / "cases").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                imported = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                imported = [a.name for a in node.names]
            else:
                continue
            for dotted in imported:
                parts = dotted.split(".")
                if parts[0] == "conformance" and any(part.startswith("_") for part in parts):
                    private.append(f"{path.name}:{node.lineno}: {dotted}")
    assert not private, f"case modules import private suite names: {private}"


def test_every_field_report_case_records_its_source():
    """Each case of golden/cases/field_reports.py names its field report (``source="F07"``),
    the report its name and description start with, and its stored record carries it."""
    cases = [c for c in goldens.all_cases() if c.generator.startswith("golden/cases/field_reports.py::")]
    assert cases
    stored = {c.name: c for c in load_all()}
    for case in cases:
        assert case.source is not None and case.source.startswith("F"), case.name
        assert case.name.startswith(f"test_{case.source.lower()}_"), (case.name, case.source)
        assert case.description.startswith(case.source), (case.description, case.source)
        assert stored[case.name].source == case.source, case.name
