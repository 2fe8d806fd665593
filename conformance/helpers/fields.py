"""``TrainingBatch`` comparisons that blame the clause of the field that differs.

SPEC.md's field table (section 3) names, per field, the clauses that define its values
(``spec_field_clauses``); a field's dtype is [tb-dtypes], its shape [tb-shapes], the set of
fields [tb-keys]. ``assert_training_batch_equal`` compares a backend's batch with the expected
one field by field and raises a ``ClauseFailure`` blamed on the first differing field's
clauses only, never on every clause of the test. ``labels`` is judged per differing element
when the caller gives the label targets (``label_targets``): a label whose target is padding
[ctb-padding-labels], one whose target starts a subdocument ([ctb-segment-starts] with masking,
[ctb-cross-document-targets] without), a masked label with another value than
``ignore_index`` [ctb-ignore-index], any other [ctb-shift].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch

from batchspec.conformance.helpers.asserts import (
    assert_batch_equal,
    assert_tensor_equal,
    clause_failure,
    summary,
)
from batchspec.conformance.helpers.sample_batches import Row, row_positions, unpacked_row
from batchspec.conformance.run.spec import spec_field_clauses, split_citation

__all__ = [
    "FIELD_ORDER",
    "SPAN_SHAPED",
    "LabelTargets",
    "assert_field_equal",
    "assert_training_batch_equal",
    "field_clauses",
    "label_clauses",
    "label_targets",
    "relation_label_clauses",
    "xdoc_offsets_only",
]


@cache
def _table() -> dict[str, dict[str, str | None]]:
    return spec_field_clauses()


def field_clauses(
    key: str, expected: Any, cited: Sequence[str] = (), conditions: Iterable[str] = ()
) -> tuple[str, ...]:
    """The clauses a difference in field ``key`` breaks: those of SPEC's field table that apply
    (a clause marked with a dtype applies to ``expected`` of that dtype: ``attention_mask``'s
    bool is [batched-block-causal], its int64 [batched-document-ids-mask]; one marked ``xdoc``
    or ``unpacked`` only when ``conditions`` holds that name), narrowed to ``cited`` when some
    of them are cited. Empty for a key the table does not list."""
    rules = _table().get(key, {})
    active = set(conditions)
    if isinstance(expected, torch.Tensor):
        active.add(str(expected.dtype).removeprefix("torch."))
    applicable = [clause for clause, only in rules.items() if only is None or only in active]
    narrowed = [clause for clause in applicable if clause in set(cited)]
    return tuple(narrowed or applicable)


# The order fields are compared in: a field before those SPEC derives from it, so that a bug in
# one field is blamed on that field, not on a later one built from it (padding from
# padding_length, document ids from positions and padding, labels and attention ids from them,
# xdoc positions from document ids, the route's keys from the attention ids).
FIELD_ORDER = (
    "input_ids",
    "padding_mask",
    "document_ids",
    "labels",
    "position_ids",
    "attention_document_ids",
    "_packed_seq_ids",
    "attention_mask",
    "packed_token_indices",
    "cu_seqlens",
    "max_seqlen",
    "seq_lens",
    "seq_lens_padded",
    "qkv_format",
)
# Fields whose shape is not [B, S] (or [B, 1, S, S]): their width counts ids or spans, so a
# shape that differs is a value their own clause defines, not [tb-shapes].
SPAN_SHAPED = ("cu_seqlens", "seq_lens", "seq_lens_padded")


def _ordered(keys: Iterable[str]) -> list[str]:
    """``keys`` in ``FIELD_ORDER`` (keys it does not list last, as given)."""
    rank = {key: i for i, key in enumerate(FIELD_ORDER)}
    return sorted(keys, key=lambda key: rank.get(key, len(FIELD_ORDER)))


def assert_field_equal(
    key: str,
    actual: Any,
    expected: Any,
    *,
    clause: str,
    call: str,
    name: str | None = None,
    conditions: Iterable[str] = (),
    document_ids: torch.Tensor | None = None,
) -> None:
    """Field ``key`` of a batch (or a slice of it, shown as ``name``) equals ``expected``
    exactly, dtype included, blamed on the field's clauses (``field_clauses``) narrowed to the
    test's ``clause`` ids; a key the table does not list is blamed on ``clause``. Under the
    ``xdoc`` condition, ``position_ids`` that differ by one constant per subdocument of
    ``document_ids`` (int64 ``[B, S]``) and nowhere on padding are blamed on [ctb-xdoc] alone
    (``xdoc_offsets_only``).

    Raises:
        ClauseFailure: naming ``name``, the call, the expected and the actual value.
    """
    __tracebackhide__ = True
    cited = [split_citation(c.strip())[0] for c in clause.split(",") if c.strip()]
    blamed = field_clauses(key, expected, cited, conditions) or tuple(cited)
    if key == "position_ids" and "xdoc" in set(conditions) and xdoc_offsets_only(actual, expected, document_ids):
        blamed = ("ctb-xdoc",)
    assert_tensor_equal(name or key, actual, expected, clause=", ".join(blamed), call=call)


@dataclass(frozen=True)
class LabelTargets:
    """What decides each label ``[B, S]``: whether its target (unshifted token ``i + 1``) is
    padding, and whether it starts a subdocument; the run's ``ignore_index`` and
    ``mask_segment_starts``."""

    padding: torch.Tensor  # bool [B, S]: the target (token i + 1) is padding
    starts: torch.Tensor  # bool [B, S]: the target starts a subdocument
    ignore_index: int
    mask_segment_starts: bool
    tokens: tuple[tuple[int, ...], ...] = ()  # the unshifted tokens of each row (target i is token i + 1)


def label_targets(
    rows: Sequence[Row], ignore_index: int, mask_segment_starts: bool, pad_to_length: int | None = None
) -> LabelTargets:
    """``LabelTargets`` of unshifted ``rows`` as converted: their positions ([ctb-positions]) and
    padding, after the unpacked route's padding to ``pad_to_length`` when it is given (the
    appended pads continue the pad tail and join the padding [unpacked-padding])."""
    positions, padding = [], []
    for row in rows:
        if pad_to_length is not None:
            row = unpacked_row(row, pad_to_length, 0)  # only its positions and padding are read
        positions.append(list(row_positions(row)))
        padding.append(row.padding_length or 0)
    pad = [[i + 1 >= len(p) - n for i in range(len(p) - 1)] for p, n in zip(positions, padding)]
    starts = [[p[i + 1] == 0 for i in range(len(p) - 1)] for p in positions]
    tokens = tuple(tuple(row.tokens) for row in rows)
    return LabelTargets(torch.tensor(pad), torch.tensor(starts), ignore_index, mask_segment_starts, tokens)


def _input(targets: LabelTargets, b: int, i: int) -> int | None:
    """The input token of label ``(b, i)`` (a label holding it is unshifted, [ctb-shift], even when
    its value is also ``ignore_index``)."""
    row = targets.tokens[b] if b < len(targets.tokens) else ()
    return row[i] if i < len(row) else None


def _target(targets: LabelTargets, b: int, i: int) -> int | None:
    """The token label ``(b, i)`` targets, when the row holds it (not an appended pad)."""
    row = targets.tokens[b] if b < len(targets.tokens) else ()
    return row[i + 1] if i + 1 < len(row) else None


def label_clauses(got: torch.Tensor, want: torch.Tensor, targets: LabelTargets) -> tuple[str, ...]:
    """The label rules the differing elements of ``got`` break: a label whose target is padding
    [ctb-padding-labels]; whose target starts a subdocument ([ctb-segment-starts] with masking;
    [ctb-cross-document-targets] without, when it is masked, [ctb-shift] when it holds another
    token); a masked label holding another value than ``ignore_index`` [ctb-ignore-index]; any
    other [ctb-shift], a kept label masked included (masking masks targets, never a kept label,
    also not at a subdocument's first input).

    One element can be read two ways: a label that should keep its subdocument-start target and
    holds ``ignore_index`` where its own input token is ``ignore_index`` too is masked
    ([ctb-cross-document-targets]) or unshifted ([ctb-shift]). It is blamed on the rule the
    unambiguous elements already break when one of its two readings is among them, else on
    [ctb-cross-document-targets]."""
    ignore = targets.ignore_index
    rules: set[str] = set()
    ambiguous: list[tuple[str, str]] = []  # (the rule blamed, the other reading) per two-way element
    for b, i in torch.nonzero(got != want).tolist():
        # holding its input token: unshifted, unless that token is ignore_index itself (then masked)
        holds_input = int(got[b, i]) == _input(targets, b, i) != ignore
        if want[b, i] == ignore and targets.padding[b, i]:
            rules.add("ctb-padding-labels")
        elif targets.starts[b, i] and targets.mask_segment_starts:
            rules.add("ctb-segment-starts")  # masking decides the label
        elif targets.starts[b, i] and got[b, i] == ignore and not holds_input:
            # kept by [ctb-cross-document-targets] but masked, or unshifted onto an ignore_index token
            if _input(targets, b, i) == ignore:
                ambiguous.append(("ctb-cross-document-targets", "ctb-shift"))
            else:
                rules.add("ctb-cross-document-targets")
        elif want[b, i] == ignore:
            rules.add("ctb-ignore-index")  # masked, but with another value
        else:  # a kept label that is wrong (masked, e.g. at an input instead of a target, or moved)
            rules.add("ctb-shift")
        held = int(got[b, i])
        if want[b, i] == ignore and held != ignore and held < 0 and held != _target(targets, b, i):
            rules.add("ctb-ignore-index")  # masked, but with another sentinel value (not its target token)
    for blamed, other in ambiguous:
        if not {blamed, other} & rules:
            rules.add(blamed)
    return tuple(sorted(rules))


def _only_at_padding(got: Any, want: Any, expected: Mapping[str, Any]) -> bool:
    """Whether ``got`` differs from ``want`` (``[B, S]`` or ``[A, B, S]`` positions) only where the
    expected ``document_ids`` are 0 (padding)."""
    ids = expected.get("document_ids")
    if not (isinstance(got, torch.Tensor) and isinstance(ids, torch.Tensor) and got.shape == want.shape):
        return False
    differ = got != want
    differ = differ.any(dim=0) if differ.dim() == 3 else differ
    return differ.shape == ids.shape and not bool((differ & (ids != 0)).any())


def xdoc_offsets_only(got: Any, want: Any, document_ids: Any) -> bool:
    """Whether xdoc ``position_ids`` ``got`` differ from ``want`` (``[B, S]``, or ``[A, B, S]``
    with one difference on every axis) by one constant per subdocument of ``document_ids``
    (int64 ``[B, S]``; a row's id ``d > 0``) and not at all on padding (id 0): each
    subdocument's own coordinates are right and only the offset [ctb-xdoc] adds to it is wrong
    ([xdoc-positions]: ``old + offset_k``; padding keeps its positions). False when nothing
    differs or the shapes do not fit."""
    if not (
        isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor) and isinstance(document_ids, torch.Tensor)
    ):
        return False
    if got.shape != want.shape or got.dtype != want.dtype or got.is_floating_point() or got.dtype == torch.bool:
        return False
    diff = got.to(torch.int64) - want.to(torch.int64)
    if diff.dim() == 3:
        if not bool((diff == diff[:1]).all()):
            return False
        diff = diff[0]
    if diff.shape != document_ids.shape or not bool(diff.any()) or bool(diff[document_ids == 0].any()):
        return False
    for row_ids, row_diff in zip(document_ids, diff):
        for document in row_ids.unique().tolist():
            values = row_diff[row_ids == document]
            if document != 0 and not bool((values == values[0]).all()):
                return False
    return True


def relation_label_clauses(differ: torch.Tensor, targets: LabelTargets) -> tuple[str, ...]:
    """The label rules that govern the elements of ``differ`` (bool ``[B, S]``) when two of the
    backend's own outputs disagree and either may be the wrong one: a label whose target is
    padding [ctb-padding-labels], whose target starts a subdocument ([ctb-segment-starts] with
    masking, [ctb-cross-document-targets] without), any other [ctb-shift]."""
    rules = set()
    for b, i in torch.nonzero(differ).tolist():
        if targets.padding[b, i]:
            rules.add("ctb-padding-labels")
        elif targets.starts[b, i]:
            rules.add("ctb-segment-starts" if targets.mask_segment_starts else "ctb-cross-document-targets")
        else:
            rules.add("ctb-shift")
    return tuple(sorted(rules))


def assert_training_batch_equal(
    actual: Mapping[str, Any],
    expected: Mapping[str, Any],
    *,
    clause: str,
    call: str,
    targets: LabelTargets | None = None,
    partial: bool = False,
    conditions: Iterable[str] = (),
) -> None:
    """``actual`` holds exactly ``expected``'s fields [tb-keys] (with ``partial``: at least
    them, the caller checks the key set), each of the same dtype
    [tb-dtypes] and shape [tb-shapes] and equal to it, blamed on that field's clauses
    (``field_clauses`` under ``conditions``: ``xdoc``, ``unpacked``; narrowed to the test's
    ``clause`` ids when some are among them;
    ``labels`` per element with ``targets``; under ``xdoc``, ``position_ids`` wrong by one
    constant per subdocument of the expected ``document_ids`` on [ctb-xdoc] alone,
    ``xdoc_offsets_only``). A field the table does not list is blamed on ``clause``.

    Raises:
        ClauseFailure: at the first field that differs, naming the field, the call (the input),
            the expected and the actual value.
    """
    __tracebackhide__ = True
    cited = [split_citation(c.strip())[0] for c in clause.split(",") if c.strip()]
    if not isinstance(actual, Mapping) or (
        set(expected) - set(actual) if partial else sorted(actual) != sorted(expected)
    ):
        shown = sorted(actual) if isinstance(actual, Mapping) else summary(actual)
        raise clause_failure(f"keys {shown}, but should be {sorted(expected)}", clause="tb-keys", call=call)
    for key in _ordered(expected):
        want, got = expected[key], actual[key]
        if isinstance(want, torch.Tensor):
            if not isinstance(got, torch.Tensor) or got.dtype != want.dtype:
                raise clause_failure(
                    f"{key}: {summary(got)}, but should be {summary(want)}", clause="tb-dtypes", call=call
                )
            if got.shape != want.shape and key not in SPAN_SHAPED:
                raise clause_failure(
                    f"{key}.shape={tuple(got.shape)}, but should be {tuple(want.shape)}",
                    clause="tb-shapes",
                    call=call,
                )
            if got.shape == want.shape and torch.equal(got, want):
                continue
        elif type(got) is not type(want):
            raise clause_failure(f"{key}: {summary(got)}, but should be {summary(want)}", clause="tb-dtypes", call=call)
        elif got == want:
            continue
        if key == "labels" and targets is not None:
            blamed = label_clauses(got, want, targets)
        else:
            blamed = field_clauses(key, want, cited, conditions) or tuple(cited)
        if key == "position_ids" and _only_at_padding(got, want, expected):
            # padding's positions: xdoc leaves them as they were; the unpacked route's pad tail is
            # [unpacked-padding]'s, a packed row's [ctb-positions]'
            blamed = ("unpacked-padding",) if "unpacked" in set(conditions) else ("ctb-positions",)
        elif (
            key == "position_ids"
            and "xdoc" in set(conditions)
            and xdoc_offsets_only(got, want, expected.get("document_ids"))
        ):
            blamed = ("ctb-xdoc",)  # the positions inside each subdocument are right: only its xdoc offset is wrong
        assert_batch_equal(actual, expected, keys=[key], clause=", ".join(blamed), call=call)
