"""``convert_text_batch`` on live objects (SPEC.md, "``TrainingBatch`` fields" and
"``convert_text_batch``"): what a stored golden case cannot express.

Every hand-written expected value of ``convert_text_batch`` (worked examples A-G, bad rows,
option types, records without positions, the unpacked route) is a golden case of
``golden/cases/convert.py`` and ``golden/cases/field_reports.py``, run by ``test_goldens.py``.
Here: the no-mutation and no-aliasing of a live ``SampleBatch``, an argument that is not a
``SampleBatch`` at all, numpy arrays of Python objects (safetensors stores no object dtype), and
a metamorphic relation between two calls.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from batchspec.conformance.golden.case_values import stored_rows
from batchspec.conformance.helpers.asserts import assert_batch_equal, assert_raises, check
from batchspec.conformance.helpers.literals import IGNORE_INDEX, convert
from batchspec.conformance.helpers.sample_batches import Contract, Row, describe_rows, packed_row, sample_batch


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-no-mutation")
def test_example_input_is_not_mutated(backend):
    """The SampleBatch's payloads and meta are unchanged, and outputs do not alias them."""
    sb = sample_batch(stored_rows())
    before = [(copy.deepcopy(r.payload), copy.deepcopy(r.meta.tags)) for r in sb.records]
    out = backend.convert_text_batch(sb, Contract(), IGNORE_INDEX, True, False)
    out["input_ids"].fill_(-5)
    out["position_ids"].fill_(-5)
    for (payload, tags), record in zip(before, sb.records):
        check(
            record.payload["input_ids"] == payload["input_ids"],
            "payload input_ids changed",
            clause="ctb-no-mutation",
        )
        check(
            np.array_equal(record.payload["positions"], payload["positions"]),
            "payload positions changed",
            clause="ctb-no-mutation",
        )
        check(
            record.payload["positions"].dtype == np.int32,
            "payload positions dtype changed",
            clause="ctb-no-mutation",
        )
        check(record.meta.tags == tags, "meta tags changed", clause="ctb-no-mutation")


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors", "ctb-input-errors.1")
@pytest.mark.parametrize(
    "argument",
    [[[1, 2, 3]], None],
    ids=["list", "none"],
)
def test_not_a_sample_batch_is_rejected(backend, argument):
    """A ``sample_batch`` without ``records`` (a plain list, None) raises TypeError naming
    ``sample_batch``; a stored case always holds a real SampleBatch."""
    assert_raises(
        TypeError,
        ("sample_batch",),
        backend.convert_text_batch,
        argument,
        Contract(),
        IGNORE_INDEX,
        False,
        False,
        clause="ctb-input-errors",
    )


# (id, the field of record 1 that is replaced, a numpy array of objects one of which is not an integer)
OBJECT_ARRAYS = [
    ("tokens_none", "input_ids", np.array([1, None, 3], dtype=object)),
    ("tokens_string", "input_ids", np.array([1, "2", 3], dtype=object)),
    ("positions_float", "positions", np.array([0, 1.5, 2], dtype=object)),
]


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-input-errors", "ctb-input-errors.4")
@pytest.mark.parametrize(("field", "value"), [a[1:] for a in OBJECT_ARRAYS], ids=[a[0] for a in OBJECT_ARRAYS])
def test_an_object_array_holding_a_non_integer_is_rejected(backend, field, value):
    """A token field or ``positions`` given as a numpy array of objects, one of them not an
    integer, raises TypeError naming record 1 and the field (item 4: non-integers)."""
    sb = sample_batch([Row((1, 2, 3), (0, 1, 2), 0), Row((1, 2, 3), (0, 1, 2), 0)])
    sb.records[1].payload[field] = value
    assert_raises(
        TypeError,
        (1, field),
        backend.convert_text_batch,
        sb,
        Contract(),
        IGNORE_INDEX,
        True,
        False,
        clause="ctb-input-errors",
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("ctb-positions")
@pytest.mark.parametrize("padding", [0, 1, 2, 4])
def test_record_without_positions_equals_its_pack_flat_form(backend, padding):
    """Dropping positions from a one-document pack_flat record changes nothing: both forms give
    the same batch (positions 0 .. L-n-1, then the pad tail's 0 .. n-1)."""
    packed = packed_row([[3, 1, 4, 1, 5]], padding=padding)
    bare = Row(packed.tokens, None, packed.padding_length)
    call = f"{describe_rows([bare])} vs {describe_rows([packed])}"
    assert_batch_equal(convert(backend, [bare]), convert(backend, [packed]), clause="ctb-positions", call=call)


# --- The unpacked route (SPEC.md, "The unpacked route"): metamorphic relations between calls. ----


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-pad-token-only-with-length")
def test_pad_token_id_without_pad_to_length_is_ignored(backend):
    """A14: the loader always passes the model's pad id; without pad_to_length it does nothing."""
    rows = stored_rows()
    plain = convert(backend, rows)
    with_pad = convert(backend, rows, pad_token_id=7)
    assert_batch_equal(with_pad, plain, clause="unpacked-pad-token-only-with-length", call="pad_token_id=7 alone")
    assert set(with_pad) == set(plain)


@pytest.mark.requires("convert_text_batch", "unpacked")
@pytest.mark.clause("unpacked-padding", "ctb-positions")
def test_padding_a_record_without_positions_equals_padding_it_beforehand(backend):
    """A record without positions that already has padding ([5,6,7,0], n = 1: pad tail [0]),
    padded to 6, equals the same record pre-padded to [5,6,7,0,0,0] (n = 3, pad tail 0 1 2) and
    converted without pad_to_length (golden case
    test_unpacked_record_without_positions_extends_its_pad_tail holds the values)."""
    [row] = stored_rows("test_unpacked_record_without_positions_extends_its_pad_tail")
    extra = 6 - len(row.tokens)
    pre_padded = Row(row.tokens + (0,) * extra, None, row.padding_length + extra)
    call = f"{describe_rows([row])}, pad_to_length=6, pad_token_id=0 vs {describe_rows([pre_padded])}"
    assert_batch_equal(
        convert(backend, [row], pad_to_length=6, pad_token_id=0),
        convert(backend, [pre_padded]),
        clause="unpacked-padding",
        call=call,
    )
