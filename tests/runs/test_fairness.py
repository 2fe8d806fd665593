"""The conformance suite is fair about error messages.

SPEC 1.0: an error message is not normative text. A check asserts the exception type
(subclasses allowed) and only the facts its clause says the message names: a parameter,
field or attribute name, a record or row index, the given values, both shapes or both
fingerprints, and the [state-load-validates-first] check names (``conformance/helpers/asserts.py``
``names()`` defines how each is matched). ``tests/probe_backends/reworded_backend.py`` is the
reference with every error message reworded: same type, same facts, another sentence (the
facts in reverse order). The suite must pass against it exactly as against the reference;
a check that fails there pins wording, not behaviour.

CI cost: one conformance run of about a minute. It runs with ``--launcher=torch`` and ``-k``
selecting every test except those of ``conformance/test_checkpoint_ranks.py``, plus the one
multi-rank test that checks an error message: ``test_missing_tp_peer_fails_within_bound``
(the missing-peer ``TimeoutError`` scenario, about 20 s under torch.distributed; its mpiexec
variant is skipped by ``--launcher``). The other multi-rank tests (about 100 s per launcher)
compare batches and state bytes and never read a message, and the reworded backend behaves
exactly like the reference there, which ``tests/runs/test_suite_run.py`` runs in full.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from _suite import ROOT, BackgroundRun, long_run

from batchspec import reference
from batchspec.conformance.helpers.asserts import Shape, names
from batchspec.conformance.helpers.pipelines import RecordingPipeline, index_pipeline, row_indices
from batchspec.conformance.helpers.sample_batches import Contract, Row, sample_batch

BACKEND_DIR = ROOT / "tests" / "probe_backends"
REWORDED_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(BACKEND_DIR), str(ROOT)]))
SELECTION = "not test_checkpoint_ranks.py or test_missing_tp_peer_fails_within_bound"
MIN_PASSED = 600  # the selection holds about 850 tests

# Every clause that asks for an error; each must pass against the reworded backend.
ERROR_CLAUSES = (
    "types-output-format",
    "contract-metadata-flag",
    "contract-validation",
    "unpad-errors",
    "meta-errors",
    "ctb-token-field",
    "ctb-packed-needs-positions",
    "ctb-option-types",
    "ctb-input-errors",
    "unpacked-errors",
    "adapt-errors",
    "xdoc-contract",
    "xdoc-errors",
    "thd-errors",
    "loader-construct-validates",
    "loader-failure-closes",
    "datum-errors",
    "collate-errors",
    "collate-keyword-only",
    "pack-errors",
    "dcoll-fields",
    "state-fingerprint",
    "state-canonical-replicas",
    "state-load-validates-first",
    "state-load-errors",
    "state-load-empty",
    "state-load-after-start",
    "state-collective-timeout",
)


def _load_reworded():
    spec = importlib.util.spec_from_file_location("reworded_backend", BACKEND_DIR / "reworded_backend.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reworded = _load_reworded()


# started at collection, beside the other long runs (tests/conftest.py)
reworded_run = long_run(
    "reworded_run",
    lambda folder: BackgroundRun(
        folder,
        "conformance",
        "--backend=reworded_backend",
        "--launcher=torch",
        # the model checks read no error message (and run against the reference's own wording anyway)
        "--ignore=conformance/model",
        "-k",
        SELECTION,
        env=REWORDED_ENV,
    ),
)


def _outcome(testcase) -> str:
    for child in testcase:
        if child.tag in {"failure", "error"}:
            return child.tag
        if child.tag == "skipped":
            return "skipped"
    return "passed"


def test_the_suite_passes_against_reworded_error_messages(reworded_run):
    assert "backend=reworded_backend version=reworded-0" in reworded_run.output
    outcomes = [_outcome(t) for t in reworded_run.testcases]
    broken = [
        f"{t.get('classname')}::{t.get('name')}" for t in reworded_run.testcases if _outcome(t) in {"failure", "error"}
    ]
    assert not broken, (
        "checks that fail on reworded messages (unfair):\n  " + "\n  ".join(broken) + "\n" + reworded_run.output[-4000:]
    )
    assert reworded_run.returncode == 0, reworded_run.output[-4000:]
    assert outcomes.count("passed") >= MIN_PASSED, f"only {outcomes.count('passed')} tests passed"


def test_the_run_executed_every_error_check(reworded_run):
    """Every clause that asks for an error was checked and passed, the multi-rank timeout
    scenario included (it ran under torch.distributed)."""
    clauses = reworded_run.report["clauses"]
    statuses = {cid: clauses.get(cid, {}).get("status", "not run") for cid in ERROR_CLAUSES}
    assert all(status == "pass" for status in statuses.values()), statuses
    timeout = [t for t in reworded_run.testcases if t.get("name") == "test_missing_tp_peer_fails_within_bound[torch]"]
    assert len(timeout) == 1 and _outcome(timeout[0]) == "passed", [t.get("name") for t in timeout]


def _raised(function, *args, **kwargs) -> BaseException:
    try:
        function(*args, **kwargs)
    except BaseException as error:  # returned for inspection
        return error
    raise AssertionError(f"{function.__name__}(...) raised nothing")


SAMPLES = [
    # (call, facts both messages must name)
    ("get_unpad_data(1-D mask)", lambda impl: impl.get_unpad_data(torch.tensor([1, 1, 0])), ("attention_mask",)),
    ("Datum(2-D)", lambda impl: impl.Datum([[1, 2], [3, 4]]), ("input_ids", Shape(2, 2))),
    (
        "collate_datums(labels of another length)",
        lambda impl: impl.collate_datums([impl.Datum([1, 2, 3], {"target_tokens": [2, 3]})], packed=True),
        ("labels", "input_ids", 2, 3),
    ),
    (
        "convert_batch_output(bshd)",
        lambda impl: impl.convert_batch_output({"attention_document_ids": torch.tensor([[1]])}, "bshd"),
        ("output_format", "batched", "thd", "bshd"),
    ),
    (
        "require_supported_packing_contract(max_sequence_length=0)",
        lambda impl: impl.require_supported_packing_contract(Contract("block_causal", False, False, 0)),
        ("max_sequence_length",),
    ),
    (
        "ZephonDataLoader.load_state_dict(bad magic)",
        lambda impl: _state_loader(impl).load_state_dict({"zephon": b"XSZSTATE" + bytes(9) + bytes(32)}),
        ("bad magic",),
    ),
]


@pytest.fixture(autouse=True)
def _zephon_scratch(tmp_path, monkeypatch):
    """Zephon's catalog and aggregation scratch space under ``tmp_path``."""
    monkeypatch.setenv("ZEPHON_CATALOG_DIR", str(tmp_path / "catalog"))
    global _SCRATCH
    _SCRATCH = tmp_path


_SCRATCH: Path | None = None


def _state_loader(impl):
    """A loader over a real in-memory Zephon pipeline (its state checks need one)."""
    return impl.ZephonDataLoader(
        index_pipeline(_SCRATCH, 4, 2, "redistribute"), row_indices, packing_contract=Contract()
    )


@pytest.mark.parametrize("sample", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_reworded_messages_differ_but_keep_the_type_and_the_facts(sample):
    """The rewording is real: another sentence, the same exception type, the same facts."""
    _, call, facts = sample
    original, new = _raised(call, reference), _raised(call, reworded)
    assert type(new) is type(original), (type(new), type(original))
    assert str(new) != str(original) and "[reworded backend]" in str(new), (str(new), str(original))
    for message in (str(original), str(new)):
        assert all(names(message, fact) for fact in facts), (message, facts)


def test_the_check_name_is_not_where_the_reference_puts_it():
    """The reference starts its state errors with the check name; the reworded backend puts it
    last, so a check that wants it at the start would fail."""
    original = _raised(_state_loader(reference).load_state_dict, {"zephon": b"BSZ"})
    check = next(c for c in reworded.CHECK_NAMES if str(original).startswith(c))
    error = _raised(_state_loader(reworded).load_state_dict, {"zephon": b"BSZ"})
    assert str(error).endswith(check) and not str(error).startswith(check), str(error)


def test_untouched_errors_keep_their_identity_and_message():
    """Errors the backend did not raise itself (here convert_batch's) propagate as the very same
    object [loader-failure-closes]; KeyError keeps its key; a reworded error keeps its cause."""
    injected = ValueError("conversion failed")

    def broken(sample_batch):
        raise injected

    batches = [sample_batch([Row((1, 2, 3), (0, 1, 2), 0)])]
    loader = reworded.ZephonDataLoader(RecordingPipeline(batches), broken, packing_contract=Contract())
    assert _raised(next, loader) is injected
    error = _raised(reworded.default_collater, [{"input_ids": [1], "labels": [2]}, {"input_ids": [3]}])
    assert type(error) is KeyError and error.args == ("labels",)

    # A reference error raised "from" another keeps that cause: tokens in a numpy object array.
    def objects_as_tokens(impl):
        batch = sample_batch([Row((1, 2, 3), (0, 1, 2), 0)])
        batch.records[0].payload["input_ids"] = np.array([object()] * 3, dtype=object)
        return impl.convert_text_batch(batch, Contract(), -100, False, False)

    original, new = _raised(objects_as_tokens, reference), _raised(objects_as_tokens, reworded)
    assert type(new) is type(original) is TypeError and str(new) != str(original)
    assert type(original.__cause__) is TypeError and type(new.__cause__) is TypeError
    assert str(new.__cause__) == str(original.__cause__)


def test_facts_survive_the_rewording():
    """The backend keeps identifiers, numbers, reprs, bracketed data, fingerprints and the
    check names, and drops the prose."""
    message = "sample_batch record 1: meta.padding_length must be in [0, 8] so that the row keeps a real token, got 9"
    text = reworded.reword(message, ValueError)
    assert text == "ValueError [reworded backend] facts: 9, [0, 8], meta.padding_length, 1, sample_batch"
    fingerprint = "ab" * 32
    text = reworded.reword(f"fingerprint mismatch: saved by {fingerprint}, this is {'cd' * 32}", ValueError)
    assert names(text, "fingerprint mismatch") and fingerprint in text and "cd" * 32 in text and "saved" not in text
    assert Path(reworded.__file__).resolve().parent == BACKEND_DIR.resolve()


@pytest.mark.parametrize(
    "message, fact, named",
    [
        ("got pad_to_length=4", "pad_to_length", True),
        ("meta.padding_length must be >= 0", "padding_length", True),
        ("payload has input_ids", "ids", False),  # a field inside a longer identifier is not named
        ("record 1: bad", 1, True),
        ("record 12: bad", 1, False),  # not part of a larger number
        ("got 1.5", 1, False),
        ("got -1", 1, False),
        ("got -1", -1, True),
        ("lengths [9, 3]", 3, True),
        ("Missing ranks=[3]", 3, True),
        ("got shape (2, 2)", Shape(2, 2), True),
        ("torch.Size([2, 2])", Shape(2, 2), True),
        ("got (12, 2)", Shape(2, 2), False),
        ("got shape ()", Shape(), True),
        ("got (3,)", Shape(3), True),
        ("ValueError [reworded backend] facts: bad magic", "bad magic", True),
    ],
)
def test_what_naming_a_fact_means(message, fact, named):
    """SPEC 1.0's definition, as conformance/helpers/asserts.py names() applies it."""
    assert names(message, fact) is named
