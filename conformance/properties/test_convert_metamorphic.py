"""Metamorphic properties of ``convert_text_batch``: two calls of the backend on related inputs.

Every test calls the backend under test twice and checks a relation between the two outputs
that SPEC.md implies, without computing a full expected batch (only the xdoc relation runs the
reference's ``enable_xdoc_attention`` on the backend's own xdoc-off output, as the oracle of
the step [ctb-xdoc] adds). A relation that fails is blamed on the clauses of the field that
breaks it:

* the THD and batched formats agree token for token, and THD's lengths are the runs of the
  selected ids [ctb-output-route, thd-lengths];
* xdoc changes only ``position_ids`` and ``attention_document_ids``, as
  ``enable_xdoc_attention`` does [ctb-xdoc];
* token values never move a boundary or a padding slot [ctb-boundaries-from-zeros];
* the relations of padding (more trailing padding, ``pad_to_length``, ``pad_token_id``):
  test_convert_padding_metamorphic.py.

Optional capabilities (``xdoc``, ``thd``, ``packed_metadata``) are drawn only when the backend
declares them, so a backend without them still runs the rest of each property. Every failure
message names the drawn rows (``describe_rows``) and the options of both calls.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec import reference
from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import assert_batch_equal, assert_tensor_equal, clause_failure
from batchspec.conformance.helpers.fields import (
    label_clauses,
    label_targets,
    relation_label_clauses,
)
from batchspec.conformance.helpers.invariants import expected_thd_lengths
from batchspec.conformance.helpers.literals import (
    IGNORE_INDEX,
    THD_PAD,
)
from batchspec.conformance.helpers.metamorphic import (
    BATCHED_ROUTE_KEYS,
    THD_ROUTE_KEYS,
    TOKEN_KEYS,
    assert_same_keys,
    convert,
)
from batchspec.conformance.helpers.sample_batches import Row, describe_rows

# Ignore indices that no token drawn in this module takes, so that ``labels == ignore_index``
# identifies exactly the masked labels (tokens may still be 0, 7, 99999: other ignore indices).
SENTINEL_IGNORE_INDICES = (IGNORE_INDEX, -1, -7, 99999)


# -- 1. THD vs batched ------------------------------------------------------------------


@pytest.mark.clause("ctb-output-route", "thd-lengths", "ctb-selected-ids", "ctb-input-errors")
@pytest.mark.requires("convert_text_batch", "thd")
@given(data=st.data())
def test_thd_and_batched_agree_token_for_token(backend, data):
    """The same rows and options in both formats: the six token fields are identical, and THD's
    lengths are the runs of the selected ids ``attention_document_ids`` both routes are built
    from [ctb-selected-ids] (xdoc on and off); a wrong batched ``_packed_seq_ids`` is
    [batched-packed-seq-ids]'s, checked elsewhere."""
    case = data.draw(cs.packed_batches(), label="case")
    xdoc = cs.draw_xdoc(data, backend)
    contract = cs.usable_contract(case.contract, backend)
    options = dict(ignore_index=case.ignore_index, mask_segment_starts=case.mask_segment_starts, xdoc=xdoc)
    call = f"{cs.describe_call(case.rows, contract, **options, output_format='thd')} vs the same call with output_format='batched'"

    thd = convert(backend, case.rows, contract, **options, output_format="thd")
    batched = convert(backend, case.rows, contract, **options, output_format="batched")

    assert_same_keys(
        thd, batched, drop_first=THD_ROUTE_KEYS, drop_second=BATCHED_ROUTE_KEYS, clause="ctb-output-route", call=call
    )
    assert_batch_equal(thd, batched, keys=TOKEN_KEYS, clause="ctb-output-route", call=call)

    ids = thd["attention_document_ids"]
    sequence_length = ids.shape[1]
    want_lens, want_padded = expected_thd_lengths(ids.tolist())
    seq_lens_padded = thd.get("seq_lens_padded")
    if isinstance(seq_lens_padded, torch.Tensor) and seq_lens_padded.ndim == 2:
        for b, row in enumerate(seq_lens_padded.tolist()):
            total = sum(v for v in row if v != THD_PAD)
            if total != sequence_length:
                raise clause_failure(
                    f"seq_lens_padded[{b}] valid entries {[v for v in row if v != THD_PAD]} sum to {total}, "
                    f"but should sum to S={sequence_length}",
                    clause="thd-lengths",
                    call=call,
                )
    assert_tensor_equal(
        "seq_lens (runs of the selected ids)",
        thd.get("seq_lens"),
        want_lens,
        clause="thd-lengths",
        call=call,
    )
    assert_tensor_equal(
        "seq_lens_padded (runs + trailing padding)", seq_lens_padded, want_padded, clause="thd-lengths", call=call
    )


# -- 2. xdoc on vs off ------------------------------------------------------------------


@pytest.mark.clause("ctb-xdoc", "ctb-input-errors")
@pytest.mark.requires("convert_text_batch", "xdoc")
@given(data=st.data())
def test_xdoc_changes_only_positions_and_attention_ids(backend, data):
    """xdoc on vs off, the relation [ctb-xdoc] states: input_ids, labels, padding_mask and
    document_ids are identical (segment starts are masked on the original boundaries), and
    ``position_ids`` and ``attention_document_ids`` are those of ``enable_xdoc_attention``
    (the reference's, as the oracle of [xdoc-attention-ids] and [xdoc-positions]) applied to
    the xdoc-off output. Whether the xdoc-off output itself is right is other checks' matter."""
    case = data.draw(cs.packed_batches(), label="case")
    output_format = cs.draw_format(data, backend)
    contract = cs.usable_contract(case.contract, backend)
    options = dict(
        ignore_index=case.ignore_index, mask_segment_starts=case.mask_segment_starts, output_format=output_format
    )
    call = f"{cs.describe_call(case.rows, contract, **options, xdoc=True)} vs the same call with xdoc off"

    on = convert(backend, case.rows, contract, **options, xdoc=True)
    off = convert(backend, case.rows, contract, **options, xdoc=False)

    assert_batch_equal(
        on, off, keys=("input_ids", "labels", "padding_mask", "document_ids"), clause="ctb-xdoc", call=call
    )
    joined = reference.enable_xdoc_attention(
        {key: off[key].clone() for key in ("document_ids", "attention_document_ids", "position_ids")}, contract
    )
    # on the real tokens (padding's ids and positions are the xdoc-off clauses' matter)
    real = ~off["padding_mask"]
    for key in ("attention_document_ids", "position_ids"):
        got = on[key]
        assert_tensor_equal(
            f"{key} (xdoc on) on the real tokens",
            torch.where(real, got, 0) if got.shape == real.shape else got,
            torch.where(real, joined[key], 0),
            clause="ctb-xdoc",
            call=f"{call}: enable_xdoc_attention of the xdoc-off output",
        )


# -- 4. token values --------------------------------------------------------------------


@pytest.mark.clause(
    "ctb-boundaries-from-zeros",
    "ctb-padding-labels",
    "ctb-padding-mask",
    "ctb-document-ids",
    "ctb-shift",
    "ctb-segment-starts",
    "ctb-cross-document-targets",
    "ctb-input-errors",
)
@pytest.mark.requires("convert_text_batch")
@given(data=st.data())
def test_boundaries_never_depend_on_token_values(backend, data):
    """Replace every token (pad tokens included) by another value, often the pad id 0, a
    BOS-like 1 or another call's ignore_index (7, 99999), keeping positions and padding: every
    field but ``input_ids`` and ``labels`` is identical, the same labels are masked, and the
    kept labels are the new targets."""
    case = data.draw(cs.packed_batches(), label="case")
    ignore = data.draw(st.sampled_from(SENTINEL_IGNORE_INDICES), label="ignore_index")
    values = st.one_of(st.sampled_from((0, 1, 7, 99999)), st.integers(0, cs.MAX_TOKEN_ID)).filter(lambda v: v != ignore)
    replaced = [
        Row(
            tuple(
                data.draw(
                    st.lists(values, min_size=len(row.tokens), max_size=len(row.tokens)), label=f"new tokens[{b}]"
                )
            ),
            row.positions,
            row.padding_length,
        )
        for b, row in enumerate(case.rows)
    ]
    xdoc = cs.draw_xdoc(data, backend)
    output_format = cs.draw_format(data, backend)
    contract = cs.usable_contract(case.contract, backend)
    options = dict(
        ignore_index=ignore, mask_segment_starts=case.mask_segment_starts, xdoc=xdoc, output_format=output_format
    )
    call = f"{cs.describe_call(case.rows, contract, **options)} vs the same call on other tokens: {describe_rows(replaced)}"

    old = convert(backend, case.rows, contract, **options)
    new = convert(backend, replaced, contract, **options)

    assert_same_keys(new, old, clause="ctb-boundaries-from-zeros", call=call)
    assert_batch_equal(
        new,
        old,
        keys=[k for k in old if k not in ("input_ids", "labels")],
        clause="ctb-boundaries-from-zeros",
        call=call,
    )
    # a label that breaks the relation is blamed on the rule that governs it (padding target,
    # subdocument start, shift), since either call may be the wrong one
    targets = label_targets(case.rows, ignore, case.mask_segment_starts)

    def governing(got, want) -> str:
        differ = got != want if got.shape == want.shape else torch.ones_like(want, dtype=torch.bool)
        return ", ".join(relation_label_clauses(differ, targets)) or "ctb-shift"

    masked_new, masked_old = new["labels"] == ignore, old["labels"] == ignore
    assert_tensor_equal(
        "labels == ignore_index (the masked labels)",
        masked_new,
        masked_old,
        clause=governing(masked_new, masked_old),
        call=call,
    )
    tokens = torch.tensor([row.tokens for row in replaced], dtype=torch.int64)
    assert_tensor_equal("input_ids", new["input_ids"], tokens[:, :-1], clause="ctb-shift", call=call)
    # the masks agree (checked above), so these labels are known exactly: the old call's masked
    # labels, and every label whose target is padding ([ctb-padding-labels], even where both
    # calls wrote another value there), stay ignore_index; the others are the new targets
    replaced_targets = label_targets(replaced, ignore, case.mask_segment_starts)
    masked = old["labels"] == ignore
    if replaced_targets.padding.shape == masked.shape:
        masked = masked | replaced_targets.padding
    want_labels = torch.where(masked, torch.tensor(ignore, dtype=torch.int64), tokens[:, 1:])
    # blamed as a label is
    rules = (
        label_clauses(new["labels"], want_labels, replaced_targets) if new["labels"].shape == want_labels.shape else ()
    )
    assert_tensor_equal("labels", new["labels"], want_labels, clause=", ".join(rules) or "ctb-shift", call=call)
