"""Blame per field (``conformance/helpers/fields.py``): a batch that differs from the expected
one in exactly one field is blamed on that field's clauses from SPEC.md's field table, for every
field of the batched (both mask types, metadata bundle) and THD routes; a dtype on [tb-dtypes],
a shape on [tb-shapes], a missing field on [tb-keys]; labels per element."""

from __future__ import annotations

import pytest
import torch

from batchspec import reference
from batchspec.conformance.helpers.asserts import ClauseFailure
from batchspec.conformance.helpers.fields import (
    SPAN_SHAPED,
    assert_training_batch_equal,
    field_clauses,
    label_clauses,
    label_targets,
    xdoc_offsets_only,
)
from batchspec.conformance.helpers.metamorphic import grown_table
from batchspec.conformance.helpers.sample_batches import Contract, packed_row, sample_batch
from batchspec.conformance.run.spec import spec_field_clauses, spec_profiles

ROWS = [packed_row([[5, 6, 7], [8, 9]], padding=2), packed_row([[3, 4, 5, 6, 7, 8]], padding=1)]
IGNORE = -100
ROUTES = {
    "block_causal+metadata": (
        Contract(packed_mask_type="block_causal", return_packed_sequence_metadata=True),
        "batched",
    ),
    "document_ids+metadata": (
        Contract(packed_mask_type="document_ids", return_packed_sequence_metadata=True),
        "batched",
    ),
    "thd": (Contract(), "thd"),
}
PROFILE = {"batched": "convert_text_batch", "thd": "thd"}


def reference_batch(route: str) -> dict:
    contract, output_format = ROUTES[route]
    return reference.convert_text_batch(sample_batch(ROWS), contract, IGNORE, False, False, output_format)


def targets():
    return label_targets(ROWS, IGNORE, False)


def blamed(actual: dict, expected: dict, cited: list[str]) -> tuple[str, ...]:
    with pytest.raises(ClauseFailure) as caught:
        assert_training_batch_equal(
            actual, expected, clause=", ".join(cited), call="convert_text_batch(ROWS)", targets=targets()
        )
    return caught.value.clauses


def one_value_changed(value):
    """``value`` with one element changed (a real token's, never padding's), or the scalar changed."""
    if isinstance(value, torch.Tensor):
        changed = value.clone()
        index = (0,) * value.ndim
        changed[index] = ~changed[index] if value.dtype == torch.bool else changed[index] + 1
        return changed
    return value + 1 if isinstance(value, int) else "bshd"


CASES = [(route, key) for route in ROUTES for key in reference_batch(route)]


@pytest.mark.parametrize(("route", "key"), CASES, ids=[f"{r}:{k}" for r, k in CASES])
def test_one_wrong_field_is_blamed_on_that_fields_clauses(route, key):
    expected = reference_batch(route)
    cited = spec_profiles()[PROFILE[ROUTES[route][1]]]
    value = expected[key]
    dtype = str(value.dtype).removeprefix("torch.") if isinstance(value, torch.Tensor) else None
    table = spec_field_clauses()[key]
    own = tuple(c for c, only in table.items() if (only is None or only == dtype) and c in cited) or tuple(
        c for c, only in table.items() if only is None or only == dtype
    )
    if key == "labels":
        own = ("ctb-shift",)  # the first label targets a real token inside its document
    assert blamed({**expected, key: one_value_changed(value)}, expected, cited) == own
    if isinstance(value, torch.Tensor):
        other_dtype = torch.int32 if value.dtype != torch.int32 else torch.int64
        assert blamed({**expected, key: value.to(other_dtype)}, expected, cited) == ("tb-dtypes",)
        # a [B, S] field's shape is [tb-shapes]'s; the width of cu_seqlens and the THD lengths
        # counts ids or spans, a value of the field's own clause
        shape_clauses = own if key in SPAN_SHAPED else ("tb-shapes",)
        assert blamed({**expected, key: value[..., :-1]}, expected, cited) == shape_clauses
    assert blamed({k: v for k, v in expected.items() if k != key}, expected, cited) == ("tb-keys",)


def test_the_mask_type_decides_the_attention_mask_clause():
    for route, clause in (
        ("block_causal+metadata", "batched-block-causal"),
        ("document_ids+metadata", "batched-document-ids-mask"),
    ):
        expected = reference_batch(route)
        wrong = {**expected, "attention_mask": one_value_changed(expected["attention_mask"])}
        assert blamed(wrong, expected, spec_profiles()["convert_text_batch"]) == (clause,)


def test_labels_are_judged_per_element():
    expected = reference_batch("document_ids+metadata")
    cited = spec_profiles()["convert_text_batch"]
    labels = expected["labels"]
    padding_target = labels.clone()
    padding_target[0, -1] = 0  # row 0's last label targets its padding
    assert blamed({**expected, "labels": padding_target}, expected, cited) == ("ctb-padding-labels",)
    boundary = labels.clone()
    boundary[0, 2] = IGNORE  # the label of token 7 targets token 8, which starts the second document
    assert blamed({**expected, "labels": boundary}, expected, cited) == ("ctb-cross-document-targets",)
    sentinel = labels.clone()
    sentinel[0, -1] = -1  # masked, but with another sentinel
    assert blamed({**expected, "labels": sentinel}, expected, cited) == ("ctb-ignore-index", "ctb-padding-labels")


def test_the_failure_shows_the_field_the_call_and_both_values():
    expected = reference_batch("thd")
    with pytest.raises(ClauseFailure) as caught:
        assert_training_batch_equal(
            {**expected, "seq_lens": one_value_changed(expected["seq_lens"])},
            expected,
            clause="thd-lengths",
            call="X(ROWS)",
        )
    message = str(caught.value)
    assert "seq_lens[0, 0]" in message and "[thd-lengths: X(ROWS)]" in message
    assert "actual:" in message and "expected:" in message


def test_conditional_clauses_apply_only_under_their_condition():
    positions = reference_batch("thd")["position_ids"]
    assert field_clauses("position_ids", positions) == ("ctb-positions",)
    assert field_clauses("position_ids", positions, conditions={"unpacked"}) == ("ctb-positions", "unpacked-padding")
    assert field_clauses("position_ids", positions, conditions={"xdoc"}) == ("ctb-positions", "ctb-xdoc")
    assert field_clauses("position_ids", positions, ["unpacked-padding"], {"unpacked"}) == ("unpacked-padding",)


def test_masking_a_kept_label_breaks_the_shift_even_at_a_subdocuments_first_input():
    """Masking masks targets that start a subdocument, never a kept label: a kept label masked
    at a subdocument's first input breaks [ctb-shift] (labels are the next tokens wherever no
    masking rule applies), as any other kept label masked would."""
    contract, output_format = ROUTES["document_ids+metadata"]
    expected = reference.convert_text_batch(sample_batch(ROWS), contract, IGNORE, True, False, output_format)
    wrong = expected["labels"].clone()
    wrong[0, 3] = IGNORE  # token 8 is the second document's first input; its target 9 is kept
    masking = label_targets(ROWS, IGNORE, True)
    with pytest.raises(ClauseFailure) as caught:
        assert_training_batch_equal({**expected, "labels": wrong}, expected, clause="", call="X", targets=masking)
    assert caught.value.clauses == ("ctb-shift",)


def test_a_masked_start_target_whose_input_is_the_ignore_index_is_judged_masked():
    """A start target's label holding its input token is unshifted [ctb-shift]; but when that
    input token is itself the ignore_index, the label reads as masked: without segment-start
    masking that breaks [ctb-cross-document-targets], not the shift."""
    rows = [packed_row([[5, 6, 7], [8, 9]], padding=2)]
    ignore = 7  # row 0's third token, whose target 8 starts the second document
    expected = reference.convert_text_batch(sample_batch(rows), Contract(), ignore, False, False)
    wrong = expected["labels"].clone()
    wrong[0, 2] = ignore
    assert label_clauses(wrong, expected["labels"], label_targets(rows, ignore, False)) == (
        "ctb-cross-document-targets",
    )
    plain = reference.convert_text_batch(sample_batch(rows), Contract(), IGNORE, False, False)
    unshifted = plain["labels"].clone()
    unshifted[0, 2] = 7  # its input token, which is not the ignore_index here
    assert label_clauses(unshifted, plain["labels"], label_targets(rows, IGNORE, False)) == ("ctb-shift",)


def test_a_two_way_start_target_follows_the_rule_the_other_labels_break():
    """The same two-way element beside unshifted labels is one more unshifted label: the kill is
    blamed on [ctb-shift] alone (the sweep's m_labels_unshifted drew an ignore_index that is also
    a token), while beside a masked start target it stays [ctb-cross-document-targets]."""
    rows = [packed_row([[5, 6, 7], [8, 9], [4, 3]], padding=2)]
    ignore = 7
    targets = label_targets(rows, ignore, False)
    expected = reference.convert_text_batch(sample_batch(rows), Contract(), ignore, False, False)["labels"]
    unshifted = expected.clone()
    unshifted[0, 2] = ignore  # two-way: masked, or its input token 7
    unshifted[0, 0] = 5  # plainly unshifted
    assert label_clauses(unshifted, expected, targets) == ("ctb-shift",)
    masked = expected.clone()
    masked[0, 2] = ignore  # two-way
    masked[0, 4] = ignore  # token 9's target 4 starts the third document: plainly masked
    assert label_clauses(masked, expected, targets) == ("ctb-cross-document-targets",)


def xdoc_batch() -> dict:
    contract, output_format = ROUTES["block_causal+metadata"]
    return reference.convert_text_batch(sample_batch(ROWS), contract, IGNORE, False, True, output_format)


def test_xdoc_positions_wrong_by_a_subdocument_offset_are_blamed_on_ctb_xdoc_alone():
    """Under xdoc, ``position_ids`` off by one constant over a whole subdocument (its offset, as a
    kernel whose offsets scan is inclusive gives) are [ctb-xdoc]'s, not [ctb-positions]' (the
    subdocument's own coordinates are right), even where the test cites [ctb-positions] only;
    a change inside a subdocument keeps the field table's clauses, and padding stays
    [ctb-positions]."""
    expected = xdoc_batch()
    ids = expected["document_ids"]
    shifted = expected["position_ids"].clone()
    shifted[ids == 2] += 3  # row 0's second subdocument starts 3 later
    actual = {**expected, "position_ids": shifted}
    with pytest.raises(ClauseFailure) as caught:
        assert_training_batch_equal(
            actual, expected, clause="ctb-positions", call="convert_text_batch(ROWS, xdoc)", conditions=["xdoc"]
        )
    assert caught.value.clauses == ("ctb-xdoc",)

    inside = expected["position_ids"].clone()
    inside[0, 1] += 1  # one coordinate inside row 0's first subdocument
    with pytest.raises(ClauseFailure) as caught:
        assert_training_batch_equal(
            {**expected, "position_ids": inside},
            expected,
            clause="ctb-positions, ctb-xdoc",
            call="convert_text_batch(ROWS, xdoc)",
            conditions=["xdoc"],
        )
    assert caught.value.clauses == ("ctb-positions", "ctb-xdoc")

    padding = expected["position_ids"].clone()
    padding[ids == 0] += 1
    with pytest.raises(ClauseFailure) as caught:
        assert_training_batch_equal(
            {**expected, "position_ids": padding},
            expected,
            clause="ctb-positions, ctb-xdoc",
            call="convert_text_batch(ROWS, xdoc)",
            conditions=["xdoc"],
        )
    assert caught.value.clauses == ("ctb-positions",)


def test_xdoc_offsets_only_needs_one_constant_per_subdocument_and_none_on_padding():
    ids = torch.tensor([[1, 1, 2, 2, 0]])
    want = torch.tensor([[0, 1, 2, 3, 0]])
    assert xdoc_offsets_only(want + torch.tensor([[0, 0, 5, 5, 0]]), want, ids)
    assert not xdoc_offsets_only(want + torch.tensor([[0, 0, 5, 4, 0]]), want, ids)
    assert not xdoc_offsets_only(want + torch.tensor([[0, 0, 5, 5, 1]]), want, ids)
    assert not xdoc_offsets_only(want, want, ids)  # nothing differs
    axes = torch.stack([want, want, want])
    assert xdoc_offsets_only(axes + torch.tensor([[0, 0, 1, 1, 0]]), axes, ids)  # the same offset on every axis
    uneven = axes.clone()
    uneven[0, 0, 2:4] += 1
    assert not xdoc_offsets_only(uneven, axes, ids)


def test_the_more_padding_relation_blames_a_lost_last_span_on_its_clause():
    """The more-padding metamorphic check grows the backend's own shorter-row THD lengths and
    ``cu_seqlens``: a row to grow whose entries are all fill (its last span lost, as a kernel
    writing each row's last span as padding gives) is a ClauseFailure on the table's clause, not
    an IndexError blamed on every clause the check cites."""
    grown = grown_table(
        torch.tensor([[3, 2, -1000]]), -1000, {0: ("add", 1)}, name="seq_lens", clause="thd-lengths", call="c"
    )
    assert grown.tolist() == [[3, 3]]
    with pytest.raises(ClauseFailure) as caught:
        grown_table(
            torch.tensor([[-1000, -1000]]), -1000, {0: ("add", 1)}, name="seq_lens", clause="thd-lengths", call="c"
        )
    assert caught.value.clauses == ("thd-lengths",)
    assert "seq_lens[0]" in str(caught.value)
