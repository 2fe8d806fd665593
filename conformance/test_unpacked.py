"""The unpacked route (SPEC.md, "The unpacked route"): metamorphic relations between calls.

Worked example E, its variants and the route's errors are golden cases of
``golden/cases/convert.py``; here the same records are converted twice and the two outputs
compared, which a stored case (one call, one expected output) cannot express.
"""

from __future__ import annotations

import pytest

from conformance.helpers.asserts import assert_batch_equal
from conformance.helpers.inputs import Row, describe_rows
from conformance.helpers.literals import convert
from conformance.helpers.stored import stored_rows


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
