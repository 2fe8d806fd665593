"""Metamorphic properties of ``convert_text_batch``'s padding: two calls of the backend on
related inputs (the relations shared with conformance/properties/test_convert_metamorphic.py:
its docstring).

* more trailing padding changes nothing at the old positions (each field on its clauses);
* ``pad_to_length`` equals pre-padding by hand, and ``pad_token_id`` only fills the appended
  slots [unpacked-padding].

Optional capabilities (``xdoc``, ``thd``, ``packed_metadata``) are drawn only when the backend
declares them. Every failure message names the drawn rows (``describe_rows``) and the options
of both calls.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import assert_batch_equal, assert_tensor_equal
from batchspec.conformance.helpers.fields import (
    FIELD_ORDER,
    assert_field_equal,
    label_targets,
    relation_label_clauses,
)
from batchspec.conformance.helpers.literals import (
    THD_PAD,
)
from batchspec.conformance.helpers.metamorphic import (
    TOKEN_KEYS,
    assert_same_keys,
    convert,
    grown_table,
)
from batchspec.conformance.helpers.sample_batches import Row, describe_rows, row_positions

# -- 3. more padding --------------------------------------------------------------------


def _with_more_padding(row: Row, extra: int, pad_token_id: int = cs.PAD_TOKEN_ID) -> Row:
    """``row`` with ``extra`` more trailing pad tokens: the pad tail's positions continue
    (``n, n + 1, ...``; a row without positions stays without, and its pad tail, which
    restarts at 0, grows the same way [ctb-positions]) and ``padding_length`` grows by
    ``extra``."""
    padding = row.padding_length or 0
    positions = None if row.positions is None else row.positions + tuple(range(padding, padding + extra))
    return Row(row.tokens + (pad_token_id,) * extra, positions, padding + extra)


def _prefix(value, size: int):
    """The first ``size`` slots of a ``[B, S]`` tensor (anything else is returned as is, for the
    assert to describe)."""
    return value[:, :size] if isinstance(value, torch.Tensor) and value.ndim == 2 else value


def _max_seqlen_of(cu_seqlens: torch.Tensor) -> int:
    longest = 0
    for row in cu_seqlens.tolist():
        valid = [v for v in row if v != -1]
        longest = max([longest, *(valid[j + 1] - valid[j] for j in range(len(valid) - 1))])
    return longest


MORE_PADDING_CLAUSES = (
    "ctb-padding-labels",
    "ctb-padding-mask",
    "ctb-positions",
    "ctb-document-ids",
    "ctb-attention-ids",
    "ctb-shift",
    "ctb-segment-starts",
    "ctb-cross-document-targets",
    "batched-packed-seq-ids",
    "batched-metadata",
    "thd-lengths",
    "ctb-input-errors",
)


@pytest.mark.clause(*MORE_PADDING_CLAUSES)
@pytest.mark.requires("convert_text_batch")
@given(data=st.data())
def test_more_padding_changes_nothing_at_old_positions(backend, data):
    """Append ``k`` pad tokens to every row (``padding_length += k``): the first ``S_old``
    slots of every ``[B, S]`` field are unchanged, and so is the mask's top-left block.

    The exact rule, from [ctb-shift, ctb-padding-labels, ctb-padding-mask]: label ``i`` targets
    unshifted token ``i + 1 <= L - 1`` for every old slot, and the first pad index ``L - n``
    does not move, so nothing old changes. The ``k`` new slots hold labels ``ignore_index``;
    they are padding except the first one when the row had ``n == 0`` (its last real token
    becomes an input). That token joins the row's last attention run, whose last valid
    ``cu_seqlens`` / ``seq_lens`` entry grows by 1, or, when its position is 0 and xdoc is
    off, starts a run of its own (one more entry; ``cu_seqlens`` may widen). The last run of
    ``seq_lens_padded`` grows by k (or a new run of k follows). ``max_seqlen`` follows.
    """
    case = data.draw(cs.packed_batches(), label="case")
    extra = data.draw(st.integers(1, 4), label="k")
    xdoc = cs.draw_xdoc(data, backend)
    output_format = cs.draw_format(data, backend)
    contract = cs.usable_contract(case.contract, backend)
    longer = [_with_more_padding(row, extra) for row in case.rows]
    options = dict(
        ignore_index=case.ignore_index,
        mask_segment_starts=case.mask_segment_starts,
        xdoc=xdoc,
        output_format=output_format,
    )
    call = (
        f"{cs.describe_call(case.rows, contract, **options)} vs the same rows with {extra} more pad tokens: "
        f"{describe_rows(longer)}"
    )

    old = convert(backend, case.rows, contract, **options)
    new = convert(backend, longer, contract, **options)

    assert_same_keys(new, old, clause="ctb-padding-labels", call=call)
    length = len(case.rows[0].tokens)
    s_old, s_new = length - 1, length - 1 + extra
    unpadded = [b for b, row in enumerate(case.rows) if not row.padding_length]  # n == 0
    conditions = {"xdoc"} if xdoc else set()
    for key in sorted(TOKEN_KEYS, key=FIELD_ORDER.index):  # a field before those derived from it
        if key == "labels":  # either call may be the wrong one: blame the rule that governs the label
            targets = label_targets(case.rows, case.ignore_index, case.mask_segment_starts)
            got, want = _prefix(new[key], s_old), old[key]
            if isinstance(got, torch.Tensor) and got.shape == want.shape and not torch.equal(got, want):
                blamed = ", ".join(relation_label_clauses(got != want, targets))
                assert_tensor_equal("labels[:, :S_old]", got, want, clause=blamed, call=call)
        assert_field_equal(
            key,
            _prefix(new[key], s_old),
            old[key],
            name=f"{key}[:, :S_old]",
            clause=", ".join(MORE_PADDING_CLAUSES),
            call=call,
            conditions=conditions,
            document_ids=old.get("document_ids"),
        )

    # The k new slots.
    ignore = case.ignore_index
    want_labels = torch.full((len(case.rows), extra), ignore, dtype=torch.int64)
    assert_tensor_equal(
        "labels[:, S_old:]", new["labels"][:, s_old:], want_labels, clause="ctb-padding-labels", call=call
    )
    slots = torch.arange(s_old, s_new)
    want_padding = torch.stack([slots >= length - (row.padding_length or 0) for row in case.rows])
    assert_tensor_equal(
        "padding_mask[:, S_old:]", new["padding_mask"][:, s_old:], want_padding, clause="ctb-padding-mask", call=call
    )
    # New input tokens and positions: the row's last real token (n == 0 only) and pad tokens with
    # their tail positions. Under xdoc that real token's position is the xdoc step's, which the
    # xdoc relation checks: here only the pad slots' positions are compared then.
    want_inputs = torch.tensor([row.tokens[s_old:s_new] for row in longer], dtype=torch.int64)
    want_positions = torch.tensor([row_positions(row)[s_old:s_new] for row in longer], dtype=torch.int64)
    got_positions = new["position_ids"][:, s_old:].clone()
    if xdoc:
        got_positions[unpadded, 0] = want_positions[unpadded, 0] = 0
    assert_tensor_equal("input_ids[:, S_old:]", new["input_ids"][:, s_old:], want_inputs, clause="ctb-shift", call=call)
    assert_tensor_equal(
        "position_ids[:, S_old:]" + (" (pad slots)" if xdoc else ""),
        got_positions,
        want_positions,
        clause="ctb-positions",
        call=call,
    )
    want_documents = torch.zeros((len(case.rows), extra), dtype=torch.int64)
    want_attention = torch.zeros((len(case.rows), extra), dtype=torch.int64)
    for b in unpadded:
        # The last real token becomes an input: a new subdocument iff its position is 0.
        positions = case.rows[b].positions
        starts = positions is not None and positions[length - 1] == 0
        want_documents[b, 0] = int(old["document_ids"][b, s_old - 1]) + (1 if starts else 0)
        want_attention[b, 0] = 1 if xdoc else want_documents[b, 0]
    # A row with no padding before gains one real input: a new attention run, or its last one grows.
    starts_run = {b: int(want_attention[b, 0]) != int(old["attention_document_ids"][b, s_old - 1]) for b in unpadded}
    assert_tensor_equal(
        "document_ids[:, S_old:]", new["document_ids"][:, s_old:], want_documents, clause="ctb-document-ids", call=call
    )
    assert_tensor_equal(
        "attention_document_ids[:, S_old:]",
        new["attention_document_ids"][:, s_old:],
        want_attention,
        clause="ctb-document-ids",
        call=call,
    )

    if output_format == "batched":
        assert_tensor_equal(
            "_packed_seq_ids[:, :S_old]",
            _prefix(new["_packed_seq_ids"], s_old),
            old["_packed_seq_ids"],
            clause="batched-packed-seq-ids",
            call=call,
        )
        assert_tensor_equal(
            "_packed_seq_ids[:, S_old:]",
            new["_packed_seq_ids"][:, s_old:],
            want_attention,
            clause="batched-packed-seq-ids",
            call=call,
        )
        mask = new["attention_mask"]
        top_left = mask[..., :s_old, :s_old] if mask.ndim == 4 else mask[:, :s_old]
        assert_tensor_equal(
            "attention_mask (top-left S_old block)",
            top_left,
            old["attention_mask"],
            clause="ctb-padding-mask",
            call=call,
        )
        if "cu_seqlens" in old:
            assert_tensor_equal(
                "packed_token_indices[:, :S_old]",
                _prefix(new["packed_token_indices"], s_old),
                old["packed_token_indices"],
                clause="batched-metadata",
                call=call,
            )
            want_indices = torch.where(want_attention > 0, slots.expand(len(case.rows), extra), torch.tensor(-1))
            assert_tensor_equal(
                "packed_token_indices[:, S_old:]",
                new["packed_token_indices"][:, s_old:],
                want_indices,
                clause="batched-metadata",
                call=call,
            )
            cumulative = old["cu_seqlens"]
            changes = {
                b: ("append", 1 + int(cumulative[b][cumulative[b] != -1][-1])) if starts_run[b] else ("add", 1)
                for b in unpadded
            }
            want_cu = grown_table(cumulative, -1, changes, name="cu_seqlens", clause="batched-metadata", call=call)
            assert_tensor_equal(
                "cu_seqlens (rows with no padding before gain one token)",
                new["cu_seqlens"],
                want_cu,
                clause="batched-metadata",
                call=call,
            )
            assert_batch_equal(new, {"max_seqlen": _max_seqlen_of(want_cu)}, clause="batched-metadata", call=call)
    else:
        seq_lens = grown_table(
            old["seq_lens"],
            THD_PAD,
            {b: ("append" if starts_run[b] else "add", 1) for b in unpadded},
            name="seq_lens",
            clause="thd-lengths",
            call=call,
        )
        padded = grown_table(
            old["seq_lens_padded"],
            THD_PAD,
            {b: ("append" if starts_run.get(b) else "add", extra) for b in range(len(case.rows))},
            name="seq_lens_padded",
            clause="thd-lengths",
            call=call,
        )
        assert_tensor_equal("seq_lens", new["seq_lens"], seq_lens, clause="thd-lengths", call=call)
        assert_tensor_equal("seq_lens_padded", new["seq_lens_padded"], padded, clause="thd-lengths", call=call)


# -- 5./6. the unpacked route -----------------------------------------------------------


@st.composite
def _unpacked_rows(draw, length: int, tokens: st.SearchStrategy[int]) -> list[Row]:
    """1..MAX_BATCH rows of at most ``length`` tokens: mostly single documents as unpacked
    records are (no positions, ``padding_length`` None or 0, 1..length tokens), sometimes
    packed rows with their own padding (``cs.packed_rows``: with positions, or rarely without,
    whose pad tail restarts at 0 [ctb-positions])."""
    rows = []
    for b in range(draw(st.integers(1, cs.MAX_BATCH), label="B")):
        form = draw(st.sampled_from(("document", "document", "document", "packed")), label=f"form[{b}]")
        if form == "packed" and length >= 2:
            size = draw(st.integers(2, length), label=f"L[{b}]")
            row = draw(cs.packed_rows(size), label=f"row[{b}]")
        else:
            size = draw(st.integers(1, length), label=f"L[{b}]")
            row = Row(
                tuple(draw(st.lists(tokens, min_size=size, max_size=size), label=f"tokens[{b}]")),
                None,
                draw(st.sampled_from((None, 0)), label=f"padding_length[{b}]"),
            )
        rows.append(row)
    return rows


def _pre_padded(row: Row, length: int, pad_token_id: int) -> Row:
    """``row`` padded by hand as [unpacked-padding] says: ``pad_token_id`` tokens whose
    positions continue the pad tail's restart (``n, n + 1, ...``), ``padding_length + k``."""
    padding = row.padding_length or 0
    extra = length - len(row.tokens)
    positions = row_positions(row) + tuple(range(padding, padding + extra))
    return Row(row.tokens + (pad_token_id,) * extra, positions, padding + extra)


PAD_TOKEN_IDS = st.one_of(st.sampled_from((0, 1, 2, 7, 99999)), st.integers(0, cs.MAX_TOKEN_ID))


def _unpacked_case(data, backend, pad_token_ids: list[int]):
    length = data.draw(st.integers(2, cs.MAX_LEN), label="pad_to_length")
    tokens = st.one_of(st.integers(0, cs.MAX_TOKEN_ID), st.sampled_from(pad_token_ids))
    rows = data.draw(_unpacked_rows(length, tokens), label="rows")
    options = dict(
        ignore_index=data.draw(st.sampled_from(cs.IGNORE_INDICES), label="ignore_index"),
        mask_segment_starts=data.draw(st.booleans(), label="mask_segment_starts"),
        xdoc=cs.draw_xdoc(data, backend),
        output_format=cs.draw_format(data, backend),
    )
    contract = cs.usable_contract(data.draw(cs.contracts(), label="contract"), backend)
    return length, rows, contract, options


@pytest.mark.clause("unpacked-padding", "unpacked-same-route", "ctb-input-errors")
@pytest.mark.requires("convert_text_batch", "unpacked")
@given(data=st.data())
def test_pad_to_length_equals_pre_padded_rows(backend, data):
    """Rows of different lengths through ``pad_to_length=L, pad_token_id=p`` give exactly the
    output of the same rows padded by hand to L and converted without ``pad_to_length``."""
    pad_token_id = data.draw(PAD_TOKEN_IDS, label="pad_token_id")
    length, rows, contract, options = _unpacked_case(data, backend, [pad_token_id])
    padded = [_pre_padded(row, length, pad_token_id) for row in rows]
    call = (
        f"{cs.describe_call(rows, contract, **options, pad_to_length=length, pad_token_id=pad_token_id)} vs "
        f"the rows padded by hand: {describe_rows(padded)}"
    )

    out = convert(backend, rows, contract, **options, pad_to_length=length, pad_token_id=pad_token_id)
    want = convert(backend, padded, contract, **options)

    assert_same_keys(out, want, clause="unpacked-same-route", call=call)
    assert_batch_equal(out, want, clause="unpacked-padding", call=call)


@pytest.mark.clause("unpacked-padding", "ctb-shift", "ctb-input-errors")
@pytest.mark.requires("convert_text_batch", "unpacked")
@given(data=st.data())
def test_pad_token_id_changes_only_the_appended_slots(backend, data):
    """Two calls that differ only in ``pad_token_id``: every field is identical except
    ``input_ids`` at the slots ``pad_to_length`` appended, which hold each call's pad id (a
    row's own pad tokens, as packed, keep their value)."""
    first = data.draw(PAD_TOKEN_IDS, label="pad_token_id")
    second = data.draw(PAD_TOKEN_IDS.filter(lambda v: v != first), label="other_pad_token_id")
    length, rows, contract, options = _unpacked_case(data, backend, [first, second])
    call = (
        f"{cs.describe_call(rows, contract, **options, pad_to_length=length, pad_token_id=first)} vs the same call "
        f"with pad_token_id={second}"
    )

    one = convert(backend, rows, contract, **options, pad_to_length=length, pad_token_id=first)
    two = convert(backend, rows, contract, **options, pad_to_length=length, pad_token_id=second)

    assert_same_keys(one, two, clause="unpacked-padding", call=call)
    assert_batch_equal(one, two, keys=[k for k in two if k != "input_ids"], clause="unpacked-padding", call=call)
    appended = torch.stack([torch.arange(length - 1) >= len(row.tokens) for row in rows])
    assert_tensor_equal(
        f"input_ids (pad_token_id={first})",
        one["input_ids"],
        torch.where(appended, torch.tensor(first), two["input_ids"]),
        clause="unpacked-padding",
        call=call,
    )
    assert_tensor_equal(
        f"input_ids (pad_token_id={second})",
        two["input_ids"],
        torch.where(appended, torch.tensor(second), one["input_ids"]),
        clause="unpacked-padding",
        call=call,
    )
