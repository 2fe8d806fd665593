"""Invariants of a converted ``TrainingBatch``, checked against its raw packed rows.

``check_converted_batch`` is the oracle of the property tests in ``properties/test_*_invariants.py`` and
of the real-data scenario. Every expected value is computed here from the raw rows in plain
Python (loops over lists); nothing comes from a backend or from ``reference``. The cost is
O(B * S) Python steps, except the block-causal mask, which is built with torch broadcasting
from the expected ids (O(B * S**2) elements, no Python loop), so a 4 x 1024 batch checks in
well under a second (and a row of 32770 one-token documents in a few hundredths).

``expected_unpad_data``, ``expected_packed_metadata`` and ``expected_thd_lengths`` are the
plain-Python expectations of ``get_unpad_data``, ``build_packed_sequence_metadata`` and the THD
lengths, written from SPEC.md's clauses (negative mask entries and per-row routes included),
never from the reference.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from batchspec.conformance.helpers.asserts import assert_tensor_equal, clause_failure, summary
from batchspec.conformance.helpers.fields import label_clauses, label_targets
from batchspec.conformance.helpers.literals import THD_PAD
from batchspec.conformance.helpers.sample_batches import Row, row_positions

__all__ = [
    "BASE_KEYS",
    "CONVERTED_BATCH_CLAUSES",
    "METADATA_KEYS",
    "check_converted_batch",
    "expected_packed_metadata",
    "expected_thd_lengths",
    "expected_unpad_data",
]

# [tb-dtypes] the table of SPEC.md section 3 (attention_mask depends on the mask type).
BASE_KEYS: dict[str, torch.dtype] = {
    "input_ids": torch.int64,
    "labels": torch.int64,
    "position_ids": torch.int64,
    "padding_mask": torch.bool,
    "document_ids": torch.int64,
    "attention_document_ids": torch.int64,
    "_packed_seq_ids": torch.int64,
}
METADATA_KEYS: tuple[str, ...] = ("packed_token_indices", "cu_seqlens", "max_seqlen")
MAX_LISTED = 8
# The marks of a test that converts a valid input and checks the batch with ``check_converted_batch``:
# the clauses it blames a failure on, and [ctb-input-errors] (``valid_input``: raising on a valid
# input fails that clause).
CONVERTED_BATCH_CLAUSES = (
    "tb-shapes",
    "tb-dtypes",
    "ctb-shift",
    "ctb-positions",
    "ctb-padding-labels",
    "ctb-padding-mask",
    "ctb-cross-document-targets",
    "ctb-segment-starts",
    "ctb-document-ids",
    "ctb-attention-ids",
    "ctb-ignore-index",
    "batched-packed-seq-ids",
    "batched-block-causal",
    "batched-document-ids-mask",
    "batched-metadata",
    "ctb-input-errors",
)


def _fail_where(bad: torch.Tensor, what: str, *, clause: str, call: str, show: Mapping[str, torch.Tensor]) -> None:
    """Raise when ``bad`` (a bool ``[B, S]`` tensor) has a True entry, listing the first ones
    as ``what`` plus the named tensors' values there."""
    __tracebackhide__ = True
    if not bool(bad.any()):
        return
    total = int(bad.sum())
    lines = []
    for index in torch.nonzero(bad, as_tuple=False)[:MAX_LISTED]:
        at = tuple(int(i) for i in index)
        values = ", ".join(f"{name}[{', '.join(map(str, at))}]={tensor[at].item()!r}" for name, tensor in show.items())
        lines.append(values)
    raise clause_failure(
        f"{what}: {total} position(s) violate it", clause=clause, call=call, details="\n  " + "\n  ".join(lines)
    )


def _expected_rows(rows: Sequence[Row], ignore_index: int, mask_segment_starts: bool) -> dict[str, Any]:
    """Plain-Python expected token-aligned fields of ``rows``."""
    lengths = {len(row.tokens) for row in rows}
    assert len(lengths) == 1, f"rows must share one unshifted length, got {sorted(lengths)}"  # sanity check
    sequence_length = lengths.pop() - 1
    expected: dict[str, list[list[Any]]] = {
        name: [] for name in ("input_ids", "labels", "position_ids", "padding_mask", "document_ids")
    }
    for row in rows:
        tokens = list(row.tokens)
        positions = list(row_positions(row))  # [ctb-positions]: without positions, pad tail restarts
        padding = row.padding_length or 0
        first_pad = len(tokens) - padding  # unshifted index of the first pad token
        input_ids, labels, position_ids, padding_mask, document_ids = [], [], [], [], []
        document = 0
        for i in range(sequence_length):
            input_ids.append(tokens[i])
            position_ids.append(positions[i])
            if i + 1 >= first_pad or (mask_segment_starts and positions[i + 1] == 0):
                labels.append(ignore_index)  # [ctb-padding-labels], [ctb-segment-starts]
            else:
                labels.append(tokens[i + 1])  # [ctb-shift], [ctb-cross-document-targets]
            is_pad = i >= first_pad
            padding_mask.append(is_pad)
            if positions[i] == 0:
                document += 1
            document_ids.append(0 if is_pad else document)
        for name, values in (
            ("input_ids", input_ids),
            ("labels", labels),
            ("position_ids", position_ids),
            ("padding_mask", padding_mask),
            ("document_ids", document_ids),
        ):
            expected[name].append(values)
    return expected


def expected_unpad_data(mask: Sequence[Sequence[int]], *, binary: bool) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``get_unpad_data`` of a ``[B, S]`` mask (nested lists, bools as 0/1), in plain Python
    [unpad-binary, unpad-indexed, unpad-outputs, unpad-precondition].

    ``binary`` is the route of the whole mask (a bool mask, or a largest value <= 1:
    ``batchspec.conformance.golden.key_blame.binary_mask`` decides it). Every value counts as
    given, negative ones included: ``indices`` are the flat positions of the nonzero entries;
    on the binary route each row with a nonzero entry is one span of its nonzero count (a
    negative entry counts); on the indexed route each row's ids ``1 … max`` that occur are
    spans, in id order, so zero and negative entries are in no span. Returns int64 ``indices``
    ``[tokens]``, int32 ``cu_seqlens`` ``[spans + 1]`` and the longest span (an ``int``).
    Cost: O(B * S log S), whatever the largest id.
    """
    flat = [int(v) for row in mask for v in row]
    indices = [i for i, v in enumerate(flat) if v != 0]
    lengths = []
    for row in mask:
        row = [int(v) for v in row]
        if binary:
            count = sum(1 for v in row if v != 0)
            if count:
                lengths.append(count)
            continue
        counts = Counter(v for v in row if v > 0)
        lengths.extend(counts[document_id] for document_id in sorted(counts))  # ids 1..max in order, 0s dropped
    cumulative = [0]
    for length in lengths:
        cumulative.append(cumulative[-1] + length)
    return (
        torch.tensor(indices, dtype=torch.int64),
        torch.tensor(cumulative, dtype=torch.int32),
        max(lengths),
    )


def expected_packed_metadata(ids: Sequence[Sequence[int]]) -> dict[str, Any]:
    """``build_packed_sequence_metadata`` of a ``[B, S]`` id mask (nested lists, bools as
    0/1), in plain Python [meta-indices, meta-cu-seqlens, meta-max-seqlen, unpad-precondition].

    Per row ``b``: ``packed_token_indices`` is ``i`` where the value is nonzero (negative
    values included), else -1; the front of the row's ``cu_seqlens`` is
    ``expected_unpad_data`` of that row alone, on the row's own route (binary when the row's
    largest value is <= 1, so a negative entry of such a row counts in its span; indexed
    otherwise, so it counts in none), a row with no nonzero entry holds ``[0]``; every row
    is padded with -1 to width ``max(1, max id) + 1``. ``max_seqlen`` is the largest
    per-row ``max_seqlen`` (0 when no row has a span).
    """
    rows = [[int(v) for v in row] for row in ids]
    width = max(1, max((v for row in rows for v in row), default=0)) + 1
    indices, cu_seqlens, max_seqlen = [], [], 0
    for row in rows:
        indices.append([i if v != 0 else -1 for i, v in enumerate(row)])
        cumulative = [0]
        if any(row):
            _, row_cu_seqlens, row_max_seqlen = expected_unpad_data([row], binary=max(row) <= 1)
            cumulative = row_cu_seqlens.tolist()
            max_seqlen = max(max_seqlen, row_max_seqlen)
        cu_seqlens.append(cumulative + [-1] * (width - len(cumulative)))
    return {
        "packed_token_indices": torch.tensor(indices, dtype=torch.int64).reshape(len(rows), -1),
        "cu_seqlens": torch.tensor(cu_seqlens, dtype=torch.int32),
        "max_seqlen": max_seqlen,
    }


def expected_thd_lengths(ids: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``seq_lens`` and ``seq_lens_padded`` of the selected ids ``[B, S]`` (nested lists), in
    plain Python [thd-lengths]: per row, the lengths of the maximal stretches of equal positive
    ids in stream order; the padded lengths add the row's trailing zero count to its last
    stretch. Both int64 ``[B, max spans]``, padded with ``THD_PAD`` (-1000)."""
    lengths_rows, padded_rows = [], []
    for row in ids:
        lengths: list[int] = []
        previous = 0
        for value in (int(v) for v in row):
            if value > 0 and value == previous and lengths:
                lengths[-1] += 1
            elif value > 0:
                lengths.append(1)
            previous = value
        trailing = 0
        while trailing < len(row) and int(row[len(row) - 1 - trailing]) == 0:
            trailing += 1
        lengths_rows.append(lengths)
        padded_rows.append(lengths[:-1] + [lengths[-1] + trailing] if lengths else [])

    def padded(table: list[list[int]]) -> torch.Tensor:
        width = max((len(row) for row in table), default=0)
        return torch.tensor([row + [THD_PAD] * (width - len(row)) for row in table], dtype=torch.int64)

    return padded(lengths_rows), padded(padded_rows)


def check_converted_batch(
    out: Mapping[str, Any],
    rows: Sequence[Row],
    *,
    ignore_index: int,
    mask_segment_starts: bool,
    contract: Any,
    call: str,
) -> None:
    """Assert that ``out`` is the batched ``convert_text_batch`` result of the packed ``rows``.

    ``check_converted_batch(out, rows, ...)`` is equivalent to asserting, for the expected
    fields computed in plain Python from ``rows`` (``Row`` objects; see
    ``batchspec.conformance.helpers.sample_batches.rows_of`` for a ``SampleBatch``):

    * I1: every field is present with its ``[B, S]`` shape ([tb-shapes], ``attention_mask``
      ``[B, 1, S, S]`` for ``"block_causal"``) and its table dtype ([tb-dtypes]);
    * I2: each label is ``ignore_index`` or the unshifted token ``i + 1``, and the labels are
      exactly the expected ones ([ctb-shift], [ctb-padding-labels], [ctb-segment-starts],
      [ctb-cross-document-targets], [ctb-ignore-index]); ``input_ids`` and ``position_ids``
      are the unshifted rows without their last entry ([ctb-shift], [ctb-positions]);
    * I3: ``padding_mask`` implies ``labels == ignore_index`` and ``document_ids == 0``,
      ``document_ids == 0`` iff ``padding_mask``, both exactly as expected
      ([ctb-padding-mask], [ctb-document-ids]); ``attention_document_ids`` and
      ``_packed_seq_ids`` (a separate tensor) equal ``document_ids`` ([ctb-attention-ids],
      [batched-packed-seq-ids]); ``attention_mask`` is the block-causal mask or the ids
      ([batched-block-causal], [batched-document-ids-mask]);
    * I6: when the contract requests metadata, the last valid ``cu_seqlens`` entry of each row
      counts its ids > 0, ``packed_token_indices == -1`` iff the id is 0, and all three keys
      equal the expected metadata; otherwise none of them is present ([batched-metadata]).

    ``call`` is the reproducible input, appended to every message. The caller passes the
    contract it converted with (``packed_mask_type``, ``return_packed_sequence_metadata``).
    """
    __tracebackhide__ = True
    expected = _expected_rows(rows, ignore_index, mask_segment_starts)
    batch_size, sequence_length = len(rows), len(rows[0].tokens) - 1
    block_causal = contract.packed_mask_type == "block_causal"
    wants_metadata = bool(contract.return_packed_sequence_metadata)
    _check_keys_shapes_dtypes(out, batch_size, sequence_length, block_causal, wants_metadata, contract, call)
    expected_ids = _check_rows_and_document_ids(out, expected, call)
    _check_labels_and_id_copies(out, rows, expected, expected_ids, ignore_index, mask_segment_starts, call)
    _check_attention_mask(out["attention_mask"], expected_ids, sequence_length, block_causal, call)
    _check_metadata(out, expected, expected_ids, batch_size, sequence_length, wants_metadata, call)


def _check_keys_shapes_dtypes(
    out: Mapping[str, Any],
    batch_size: int,
    sequence_length: int,
    block_causal: bool,
    wants_metadata: bool,
    contract: Any,
    call: str,
) -> None:
    """I1 of ``check_converted_batch``: every key present ([tb-shapes], [batched-metadata]), each
    field ``[B, S]`` (``attention_mask`` ``[B, 1, S, S]`` when block-causal) with its dtype
    ([tb-shapes], [tb-dtypes])."""
    __tracebackhide__ = True
    # I1: keys, shapes, dtypes.
    needed = [*BASE_KEYS, "attention_mask", *(METADATA_KEYS if wants_metadata else ())]
    missing = [key for key in needed if key not in out]
    if missing:
        raise clause_failure(
            f"keys {missing} are missing, but should be present; keys: {sorted(out)}",
            clause="tb-shapes, batched-metadata",
            call=call,
        )
    for key, dtype in BASE_KEYS.items():
        value = out[key]
        if not isinstance(value, torch.Tensor):
            raise clause_failure(f"{key}: {summary(value)}, but should be a tensor", clause="tb-dtypes", call=call)
        if tuple(value.shape) != (batch_size, sequence_length):
            raise clause_failure(
                f"{key}.shape={tuple(value.shape)}, but should be {(batch_size, sequence_length)} (S = L - 1)",
                clause="tb-shapes",
                call=call,
            )
        if value.dtype != dtype:
            raise clause_failure(f"{key}.dtype={value.dtype}, but should be {dtype}", clause="tb-dtypes", call=call)
    mask = out["attention_mask"]
    mask_shape = (batch_size, 1, sequence_length, sequence_length) if block_causal else (batch_size, sequence_length)
    mask_dtype = torch.bool if block_causal else torch.int64
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != mask_shape:
        raise clause_failure(
            f"attention_mask: {summary(mask)}, but should have shape {mask_shape} for "
            f"packed_mask_type={contract.packed_mask_type!r}",
            clause="tb-shapes",
            call=call,
        )
    if mask.dtype != mask_dtype:
        raise clause_failure(
            f"attention_mask.dtype={mask.dtype}, but should be {mask_dtype}", clause="tb-dtypes", call=call
        )


def _check_rows_and_document_ids(out: Mapping[str, Any], expected: dict[str, Any], call: str) -> torch.Tensor:
    """``input_ids``, ``position_ids`` and ``padding_mask`` exactly as expected ([ctb-shift],
    [ctb-positions], [ctb-padding-mask]), then I3: ``document_ids`` is 0 exactly at padding and
    equals the expected ids ([ctb-document-ids]). Returns the expected ids ``[B, S]`` int64."""
    __tracebackhide__ = True
    padding_mask, document_ids = out["padding_mask"], out["document_ids"]

    # Inputs, positions and padding come straight from the rows: compare them exactly first.
    assert_tensor_equal(
        "input_ids",
        out["input_ids"],
        torch.tensor(expected["input_ids"], dtype=torch.int64),
        clause="ctb-shift",
        call=call,
    )
    assert_tensor_equal(
        "position_ids",
        out["position_ids"],
        torch.tensor(expected["position_ids"], dtype=torch.int64),
        clause="ctb-positions",
        call=call,
    )
    expected_padding = torch.tensor(expected["padding_mask"], dtype=torch.bool)
    assert_tensor_equal("padding_mask", padding_mask, expected_padding, clause="ctb-padding-mask", call=call)

    # I3 (relation form): padding carries no document.
    _fail_where(
        padding_mask & (document_ids != 0),
        "padding_mask must imply document_ids == 0",
        clause="ctb-document-ids",
        call=call,
        show={"document_ids": document_ids},
    )
    # padding_mask equals the expected one (checked above), so a 0 id at a real token is the ids' fault
    _fail_where(
        (document_ids == 0) != padding_mask,
        "document_ids == 0 must hold exactly where padding_mask is True (text rows)",
        clause="ctb-document-ids",
        call=call,
        show={"document_ids": document_ids, "padding_mask": padding_mask},
    )
    expected_ids = torch.tensor(expected["document_ids"], dtype=torch.int64)
    assert_tensor_equal("document_ids", document_ids, expected_ids, clause="ctb-document-ids", call=call)
    return expected_ids


def _check_labels_and_id_copies(
    out: Mapping[str, Any],
    rows: Sequence[Row],
    expected: dict[str, Any],
    expected_ids: torch.Tensor,
    ignore_index: int,
    mask_segment_starts: bool,
    call: str,
) -> None:
    """I2: the exact labels, each differing label blamed on its rule ([ctb-shift],
    [ctb-padding-labels], [ctb-segment-starts], [ctb-cross-document-targets], [ctb-ignore-index]);
    then ``attention_document_ids`` and ``_packed_seq_ids`` (a separate tensor) equal the ids
    ([ctb-attention-ids], [batched-packed-seq-ids])."""
    __tracebackhide__ = True
    labels = out["labels"]
    # I2, exact labels computed from the rows: each differing label is blamed on its rule
    # (padding target, subdocument start, sentinel value or shift: fields.label_clauses).
    expected_labels = torch.tensor(expected["labels"], dtype=torch.int64)
    if (
        isinstance(labels, torch.Tensor)
        and labels.shape == expected_labels.shape
        and not torch.equal(labels, expected_labels)
    ):
        blamed = label_clauses(labels, expected_labels, label_targets(rows, ignore_index, mask_segment_starts))
        assert_tensor_equal("labels", labels, expected_labels, clause=", ".join(blamed), call=call)
    assert_tensor_equal("labels", labels, expected_labels, clause="ctb-shift", call=call)
    assert_tensor_equal(
        "attention_document_ids", out["attention_document_ids"], expected_ids, clause="ctb-attention-ids", call=call
    )
    assert_tensor_equal(
        "_packed_seq_ids", out["_packed_seq_ids"], expected_ids, clause="batched-packed-seq-ids", call=call
    )
    if (
        out["_packed_seq_ids"].untyped_storage().data_ptr()
        == out["attention_document_ids"].untyped_storage().data_ptr()
    ):
        raise clause_failure(
            "_packed_seq_ids shares storage with attention_document_ids, but should be a separate tensor",
            clause="batched-packed-seq-ids",
            call=call,
        )


def _check_attention_mask(
    mask: torch.Tensor, expected_ids: torch.Tensor, sequence_length: int, block_causal: bool, call: str
) -> None:
    """``attention_mask`` is the block-causal mask over the expected ids ([batched-block-causal])
    or the ids themselves ([batched-document-ids-mask])."""
    __tracebackhide__ = True
    # Attention mask: block-causal over the expected ids (torch broadcasting), or the ids.
    if block_causal:
        same = (expected_ids[:, :, None] == expected_ids[:, None, :]) & (expected_ids[:, :, None] > 0)
        causal = torch.ones((sequence_length, sequence_length), dtype=torch.bool).tril()
        assert_tensor_equal("attention_mask", mask, (same & causal)[:, None], clause="batched-block-causal", call=call)
    else:
        assert_tensor_equal("attention_mask", mask, expected_ids, clause="batched-document-ids-mask", call=call)


def _check_metadata(
    out: Mapping[str, Any],
    expected: dict[str, Any],
    expected_ids: torch.Tensor,
    batch_size: int,
    sequence_length: int,
    wants_metadata: bool,
    call: str,
) -> None:
    """I6: the metadata keys, present exactly when requested, typed ([tb-dtypes]) and equal to the
    expected metadata ([batched-metadata])."""
    __tracebackhide__ = True
    # I6: metadata, present exactly when requested.
    if not wants_metadata:
        present = [key for key in METADATA_KEYS if key in out]
        if present:
            raise clause_failure(
                f"keys {present} are present, but should be absent: the contract does not request metadata",
                clause="batched-metadata",
                call=call,
            )
        return
    indices, cu_seqlens, max_seqlen = (out[key] for key in METADATA_KEYS)
    for key in ("packed_token_indices", "cu_seqlens"):
        if not isinstance(out[key], torch.Tensor):
            raise clause_failure(f"{key}: {summary(out[key])}, but should be a tensor", clause="tb-dtypes", call=call)
    if type(max_seqlen) is not int:
        raise clause_failure(
            f"max_seqlen: {summary(max_seqlen)}, but should be a Python int", clause="tb-dtypes", call=call
        )
    if tuple(indices.shape) == (batch_size, sequence_length):
        _fail_where(
            (indices == -1) != (expected_ids == 0),
            "packed_token_indices == -1 must hold exactly where attention_document_ids == 0",
            clause="batched-metadata",
            call=call,
            show={"packed_token_indices": indices, "attention_document_ids": expected_ids},
        )
    if cu_seqlens.ndim == 2 and cu_seqlens.shape[0] == batch_size:
        for b in range(batch_size):
            row = [int(v) for v in cu_seqlens[b].tolist()]
            valid = [v for v in row if v != -1]
            tokens = sum(1 for v in expected["document_ids"][b] if v > 0)
            if not valid or valid[-1] != tokens:
                raise clause_failure(
                    f"cu_seqlens[{b}]={row}: last valid entry {valid[-1] if valid else None}, but should be "
                    f"{tokens} (the row's tokens with attention_document_ids > 0)",
                    clause="batched-metadata",
                    call=call,
                )
    want = expected_packed_metadata(expected["document_ids"])
    for key, value in (("packed_token_indices", indices), ("cu_seqlens", cu_seqlens)):
        if value.dtype != want[key].dtype:  # the dtype is [tb-dtypes]'s, the values [batched-metadata]'s
            raise clause_failure(
                f"{key}.dtype={value.dtype}, but should be {want[key].dtype}", clause="tb-dtypes", call=call
            )
        assert_tensor_equal(key, value, want[key], clause="batched-metadata", call=call)
    if max_seqlen != want["max_seqlen"]:
        raise clause_failure(
            f"max_seqlen={max_seqlen}, but should be {want['max_seqlen']}",
            clause="batched-metadata",
            call=call,
        )
