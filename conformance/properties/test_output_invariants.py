"""Hypothesis invariants of ``convert_batch_output`` (SPEC.md, "7. Output formats"): THD
``seq_lens`` and ``seq_lens_padded`` are the stretches of the selected ids, for many
subdocuments and ids at the narrowing edges.

Inputs come from ``batchspec.conformance.helpers.strategies``; expected values are computed in
plain Python (``batchspec.conformance.helpers.invariants``). The code under test is reached only
through the ``backend`` fixture.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import assert_tensor_equal, check
from batchspec.conformance.helpers.invariants import (
    expected_thd_lengths,
)


@st.composite
def _thd_ids(draw):
    """Selected ids ``[B, S]`` as ``convert_batch_output(batch, "thd")`` accepts them: per row,
    stretches of equal positive ids in stream order, each id once ([thd-errors] rejects one that
    reappears), then trailing zeros, at least one positive id. Ids count up from 1 and now and
    then jump to the narrowing edges (``NARROW_EDGE_IDS``, ``INT16_EDGE_IDS``: a jump, not a
    loop, costs nothing here). About one batch in eight has many subdocuments: B <= 2, S in
    131..MANY_LEN, stretches of mostly one token, more than 127 in a row."""
    many = draw(st.integers(0, 7), label="many subdocuments") == 0
    if many:
        batch_size = draw(st.integers(1, 2), label="B")
        sequence_length = draw(st.integers(131, cs.MANY_LEN), label="S")
        stretch = st.sampled_from((1, 1, 1, 1, 1, 1, 2))
    else:
        batch_size = draw(st.integers(1, cs.MAX_BATCH), label="B")
        sequence_length = draw(st.integers(1, cs.MAX_LEN), label="S")
        stretch = st.integers(1, 4)
    rows = []
    for b in range(batch_size):
        real = draw(
            st.sampled_from((sequence_length, sequence_length - 3)) if many else st.integers(1, sequence_length)
        )
        row, current = [], 0
        while len(row) < real:
            current += 1
            if not many and draw(st.integers(0, 3), label="jump") == 0:
                current = max(current, draw(st.sampled_from(cs.NARROW_EDGE_IDS + cs.INT16_EDGE_IDS), label="edge"))
            row.extend([current] * min(draw(stretch, label=f"stretch[{b}]"), real - len(row)))
        rows.append(row + [0] * (sequence_length - real))
    return rows


@pytest.mark.clause("thd-lengths", "thd-qkv-format")
@pytest.mark.requires("convert_batch_output")
@given(data=st.data())
def test_convert_batch_output_thd_lengths_are_the_stretches(backend, data):
    """``convert_batch_output(batch, "thd")`` on selected ids of many subdocuments or ids at the
    int8 / int16 edges (``_thd_ids``): ``seq_lens`` and ``seq_lens_padded`` are
    ``expected_thd_lengths``'s (the stretches of equal positive ids, the trailing zeros added to
    the last one) [thd-lengths], and ``qkv_format`` is ``"thd"`` [thd-qkv-format]."""
    ids = data.draw(_thd_ids(), label="ids")
    call = f"convert_batch_output({{'document_ids': torch.tensor({ids}), 'attention_document_ids': (the same)}}, 'thd')"
    selected = torch.tensor(ids, dtype=torch.int64)
    out = backend.convert_batch_output({"document_ids": selected, "attention_document_ids": selected.clone()}, "thd")
    seq_lens, seq_lens_padded = expected_thd_lengths(ids)
    assert_tensor_equal("seq_lens", out.get("seq_lens"), seq_lens, clause="thd-lengths", call=call)
    assert_tensor_equal("seq_lens_padded", out.get("seq_lens_padded"), seq_lens_padded, clause="thd-lengths", call=call)
    check(
        out.get("qkv_format") == "thd",
        f"qkv_format={out.get('qkv_format')!r}, but should be 'thd'",
        clause="thd-qkv-format",
        call=call,
    )
