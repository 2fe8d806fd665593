"""Golden cases for SPEC.md's "``ZephonDataLoader`` (iteration and ``close``)" and "The
real-data scenario".

Each case plays a script of actions ("next", "iter", "close") against
``ZephonDataLoader(pipeline, convert_text_batch bound to the options, output_format,
packing_contract=...)`` over a stand-in pipeline of the stored batches
(``conformance/golden/loader_script.py``, a ``RecordingPipeline``: it counts ``iter()`` calls,
batches taken and stream closes, and with ``fail_at`` raises ``RuntimeError("pipeline worker failed")`` instead of that batch;
``convert_fails_at`` makes ``convert_batch`` raise ``ValueError("conversion failed")`` on that
call). The expected value lists each action's outcome (the converted batch,
``"StopIteration"``, or the raised error as ``{"raised": type name, "same_exception": whether
it is the injected exception object itself}``, never its message) and what the pipeline saw.
Hand-written except the THD stream and the real-data case, which the reference generates (and
which must not raise: generation refuses a generated case whose run records an error unless
it declares ``expects_error=True``).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from batchspec.conformance.golden.api import (
    IGNORE_INDEX,
    Case,
    Row,
    Value,
    corpus_pipeline,
    long,
    packed_row,
    rows_of,
    zephon_catalog,
)

DOC_IDS = {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": False}


def _three_batches():
    """Three one-row batches; batch k holds documents [10+k, 11+k] and [12+k], then one pad."""
    return [[packed_record(packed_row([[10 + k, 11 + k], [12 + k]], padding=1))] for k in range(3)]


def packed_record(row: Row) -> dict:
    """One stored record of the packed ``row``: tokens, positions and padding length (a loader case's
    stream batch is a list of these)."""
    if row.positions is None:
        raise ValueError(f"packed_record: a packed row has positions, got positions=None in {row!r}")
    return {
        "tokens": long(list(row.tokens)),
        "positions": long(list(row.positions)),
        "padding_length": row.padding_length,
    }


def _batch(k: int, ignore_index: int = IGNORE_INDEX) -> dict:
    """The converted batch k of ``_three_batches`` (document_ids contract)."""
    return {
        "input_ids": long([[10 + k, 11 + k, 12 + k]]),
        "labels": long([[11 + k, 12 + k, ignore_index]]),
        "position_ids": long([[0, 1, 0]]),
        "document_ids": long([[1, 1, 2]]),
        "attention_mask": long([[1, 1, 2]]),
    }


def _loader(name, clauses, description, script, expected=None, error=None, **options):
    return Case(
        name=f"test_loader_{name}",
        clauses=clauses,
        description=description,
        function="ZephonDataLoader",
        inputs={"batches": _three_batches()},
        options={"contract": DOC_IDS, **options, "script": script},
        expected=expected,
        error=error,
    )


def case_stream():
    return _loader(
        "lazy_iter_self_next_exhaustion",
        ("loader-construct-lazy", "loader-iter-self", "loader-next", "loader-exhaustion"),
        "construction never calls iter(pipeline); iter(loader) is the loader and never restarts; three next() "
        "give the converted batches in stream order; exhaustion closes the stream once and stays stopped",
        ["iter", "next", "iter", "next", "next", "next", "next"],
        expected={
            "outcomes": [True, _batch(0, -1), True, _batch(1, -1), _batch(2, -1), "StopIteration", "StopIteration"],
            "iter_calls_at_construction": 0,
            "iter_calls": 1,
            "stream_closed": 1,
            "batches_converted": 3,
            "converted_in_stream_order": True,
        },
        ignore_index=-1,
    )


def case_close():
    return [
        _loader(
            "close_is_idempotent",
            ("loader-close", "loader-iter-self"),
            "close() after one batch closes the stream once (twice is a no-op); later next() raises "
            "StopIteration without restarting the stream",
            ["next", "close", "close", "next", "iter", "next"],
            expected={
                "outcomes": [_batch(0), None, None, "StopIteration", True, "StopIteration"],
                "iter_calls_at_construction": 0,
                "iter_calls": 1,
                "stream_closed": 1,
                "batches_converted": 1,
            },
        ),
        _loader(
            "close_before_start",
            ("loader-close", "loader-construct-lazy"),
            "closing a loader that never started is allowed; next() then raises StopIteration",
            ["close", "close", "next"],
            expected={
                "outcomes": [None, None, "StopIteration"],
                "iter_calls_at_construction": 0,
                "batches_converted": 0,
            },
        ),
    ]


def case_failures():
    return [
        _loader(
            "pipeline_failure_closes",
            ("loader-failure-closes", "loader-next"),
            "the pipeline raises on its second batch: the same exception propagates, the stream is closed, "
            "and next() then raises StopIteration",
            ["next", "next", "next"],
            fail_at=1,
            expected={
                "outcomes": [_batch(0), {"raised": "RuntimeError", "same_exception": True}, "StopIteration"],
                "iter_calls": 1,
                "stream_closed": 1,
                "batches_converted": 1,
            },
        ),
        _loader(
            "convert_failure_closes",
            ("loader-failure-closes",),
            "convert_batch raises on the first batch: the same exception propagates, the stream is closed, "
            "and next() then raises StopIteration",
            ["next", "next"],
            convert_fails_at=0,
            expected={
                "outcomes": [{"raised": "ValueError", "same_exception": True}, "StopIteration"],
                "iter_calls": 1,
                "stream_closed": 1,
                "batches_converted": 1,
            },
        ),
    ]


def case_construction_errors():
    bad = [
        (
            "rejects_unknown_mask_type",
            {"contract": {"packed_mask_type": "flash_varlen", "return_packed_sequence_metadata": False}},
            ("ValueError", ("packed_mask_type",)),
            "an unknown packed_mask_type is rejected at construction",
        ),
        (
            "rejects_metadata_flag_not_bool",
            {"contract": {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": "yes"}},
            ("TypeError", ("return_packed_sequence_metadata",)),
            "a non-bool metadata flag is rejected at construction",
        ),
        (
            "rejects_output_format",
            {"output_format": "bshd"},
            ("ValueError", ("output_format", "batched", "thd", Value("bshd"))),
            "an unknown output_format is rejected at construction",
        ),
        (
            "rejects_uncallable_convert_batch",
            {"convert": "not_callable"},
            ("TypeError", ()),
            "a convert_batch that is not callable is a TypeError at construction",
        ),
        (
            "rejects_positional_contract",
            {"contract_positional": True},
            ("TypeError", ()),
            "packing_contract is keyword-only: passing it positionally is a TypeError",
        ),
    ]
    return [
        _loader(name, ("loader-construct-validates",), description, ["next"], error=error, **options)
        for name, options, error, description in bad
    ]


def case_thd_stream():
    rng = random.Random(8)

    def batch():
        # Like pack_flat's output, every row of one SampleBatch has the same length (rows of
        # different lengths are rejected [ctb-input-errors], and the batch would never reach THD).
        length = rng.randint(8, 12)
        out = []
        for _ in range(2):
            padding = rng.randint(0, 3)
            content = length - padding
            bounds = [0, *sorted(rng.sample(range(1, content), rng.randint(0, 2))), content]
            docs = [[rng.randrange(3, 500) for _ in range(end - start)] for start, end in zip(bounds, bounds[1:])]
            out.append(packed_record(packed_row(docs, padding=padding)))
        return out

    return Case(
        name="test_loader_thd_stream",
        clauses=("loader-next", "loader-exhaustion", "ctb-output-route"),
        description="THD output with mask_segment_starts through the loader (the contract's metadata request "
        "is ignored): two batches of two random packed rows of one length (1-3 documents, 0-3 "
        "pad tokens each), then StopIteration",
        function="ZephonDataLoader",
        inputs={"batches": [batch(), batch()]},
        options={
            "contract": {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True},
            "output_format": "thd",
            "mask_segment_starts": True,
            "script": ["next", "next", "next"],
        },
    )


def _corpus_batches(picks: tuple[int, ...], seq_len: int, batch_size: int) -> list:
    """The rows of the SampleBatches at stream positions ``picks`` of the real Zephon
    pipeline over golden/corpus (inline runner, fixed seed: deterministic)."""
    with tempfile.TemporaryDirectory(prefix="batchspec-golden-") as scratch, zephon_catalog(Path(scratch) / "catalog"):
        stream = iter(corpus_pipeline(Path(scratch), seq_len=seq_len, batch_size=batch_size))
        try:
            stream_batches = [rows_of(next(stream)) for _ in range(max(picks) + 1)]
            batches = [stream_batches[i] for i in picks]
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
    return [[packed_record(r) for r in batch] for batch in batches]


def case_real_data():
    return Case(
        name="test_loader_real_data_pipeline",
        clauses=(
            "real-data-pipeline",
            "loader-next",
            "loader-exhaustion",
            "tb-shapes",
            "tb-dtypes",
            "ctb-padding-labels",
            "ctb-padding-mask",
            "ctb-document-ids",
            "batched-metadata",
        ),
        description="real data: the rows of SampleBatches 0, 12 and 13 (the first one, then the first two whose rows "
        "hold several documents and padding) of the real Zephon pipeline over golden/corpus (Node.js API "
        "text, committed BPE, tokenize -> pack_flat(257, first_fit) -> batch(2), inline runner; "
        "conformance/helpers/pipelines.py corpus_pipeline(seq_len=256, batch_size=2)) read through "
        "ZephonDataLoader with a document_ids contract that requests metadata",
        function="ZephonDataLoader",
        inputs={"batches": _corpus_batches((0, 12, 13), 256, 2)},
        options={
            "contract": {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True},
            "script": ["next", "next", "next", "next"],
        },
    )
