"""The canonical collaters, vectorized: ``default_collater``, ``packed_sequence_thd_collater`` and
``pack_features_for_thd`` (SPEC.md section 8, "The canonical collaters").

Same outputs, key order, dtypes, devices and errors as ``batchspec.reference.collaters`` (upstream
nemo-automodel 0.7.0 with decision D-6: nothing given is modified), computed with whole-batch
numpy / torch operations instead of per-row Python list padding:

* list fields of Python ints are converted once per row to int64 (``np.array``), concatenated,
  and scattered into a preallocated ``[B, S]`` array with one boolean-mask assignment;
* tensor fields keep the reference's ``torch.cat`` / ``torch.stack`` (already whole-batch);
* ``pack_features_for_thd`` joins the features with ``itertools.chain`` (C-level, no Python
  loop over tokens).

Inputs outside that (floats, bools or big ints in a list, a list field holding a non-list row,
a pad value that is not an int64 int, THD synthesis over tensors that are not CPU int64, ...)
are delegated to the reference by name: ``DELEGATIONS`` holds, per function, the predicates
checked before any work (backends/vectorized/README.md lists them, with the input class and
their share of the suite's calls). Every other input, errors included, is this module's.
"""

from __future__ import annotations

import array
from collections.abc import Mapping, Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np
import torch

from batchspec.backends.vectorized import paths
from batchspec.backends.vectorized.rules import (
    PAD_TOKEN_IDS_KEY,
    batched_field,
    collater_pad_value,
    is_list_field,
    odd_width,
    padded_width,
    thd_batch,
    with_batch_axis,
)
from batchspec.reference import collaters as _reference
from batchspec.reference.contract import CROSS_ENTROPY_IGNORE_IDX, INT64_MAX, INT64_MIN, THD_LENGTH_PAD

__all__ = [
    "DELEGATIONS",
    "PAD_TOKEN_IDS_KEY",
    "default_collater",
    "pack_features_for_thd",
    "packed_sequence_thd_collater",
]

# The prepacked THD collater's token fields, stacked to [B, L] [thdcoll-prepacked].
_TOKEN_FIELDS = ("input_ids", "labels", "position_ids")
_LENGTH_FIELDS = ("seq_lens", "seq_lens_padded")


# --- what the fast paths take -------------------------------------------------------------------


def _is_int64_pad(pad: Any) -> bool:
    """Whether ``pad`` is a plain Python int that int64 holds (the only pad the fast paths use)."""
    return type(pad) is int and INT64_MIN <= pad <= INT64_MAX


def _int_values(row: list[Any]) -> bool:
    """Whether every element of the list ``row`` is exactly a Python int (one C-level pass over
    the element types): what ``torch.tensor(row, dtype=torch.int64)`` reads without casting,
    or refuses with a ``ValueError`` outside int64 (``_int_row`` raises it too)."""
    return list(map(type, row)).count(int) == len(row)


def _list_fields(batch: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Any]]]:
    """``(key, rows)`` of each list field ``default_collater`` pads, in item 0's key order."""
    fields = []
    for key in batch[0]:
        if key != PAD_TOKEN_IDS_KEY:
            values = [item[key] for item in batch]
            if is_list_field(values):
                fields.append((key, values))
    return fields


def _list_pad(key: str, rows: list[Any], overrides: Any) -> Any:
    """A list field's pad value [dcoll-pad-values]; item 0's last element when there is no
    other (``IndexError`` when row 0 is empty, as the reference)."""
    pad = collater_pad_value(key, overrides)
    return rows[0][-1] if pad is None else pad


# --- the fast paths -------------------------------------------------------------------------------


def _scatter_rows(rows: list[Any], lengths: list[int], width: int, pad: int, field: str) -> np.ndarray:
    """``rows`` of ``field`` (lists of ints or 1-D CPU int64 tensors; ``lengths`` their lengths)
    right-padded with ``pad`` to ``width`` as an int64 ``[B, width]`` array: one concatenation
    and one boolean-mask assignment. ``ValueError`` for a value outside int64 (``_int_row``)."""
    out = np.full((len(rows), width), pad, dtype=np.int64)
    parts = [_int_row(row, field, index) for index, (row, length) in enumerate(zip(rows, lengths)) if length]
    if parts:
        flat = np.concatenate(parts)
        out[np.arange(width) < np.asarray(lengths)[:, None]] = flat
    return out


def _int_row(row: Any, field: str, index: int) -> np.ndarray:
    """A 1-D int64 numpy array of a row the predicates let through: a CPU int64 tensor (read in
    place; callers copy) or a list of Python ints (one C-level conversion, ``array.array``).

    Raises:
        ValueError: a value outside int64, as upstream's ``torch.tensor`` (naming field and row).
    """
    if type(row) is torch.Tensor:
        return row.numpy()
    try:
        values = array.array("q", row)
    except OverflowError:
        raise ValueError(f"{field}: row {index} holds a value outside the int64 range") from None
    return np.frombuffer(values, dtype=np.int64) if values else np.zeros(0, dtype=np.int64)


def _pad_int_lists(rows: list[Any], pad: int, field: str, pad_seq_len_divisible: Any = None) -> np.ndarray:
    """The values of the reference's ``torch.tensor(_right_pad(rows, pad, divisible),
    dtype=torch.int64)`` as an int64 numpy array, for lists of ints [dcoll-fields,
    dcoll-pad-values, thdcoll-prepacked]; ``ValueError`` for a value outside int64."""
    lengths = [len(row) for row in rows]
    return _scatter_rows(rows, lengths, padded_width(max(lengths), pad_seq_len_divisible), pad, field)


def _stack_rows(rows: list[Any], field: str) -> torch.Tensor:
    """Equal-length token rows stacked to ``[B, L]`` [thdcoll-prepacked]: tensors with the
    reference's ``torch.stack`` (dtype and device kept), int lists converted row by row (int64)
    then stacked, in upstream's order.

    Raises:
        ValueError: a value outside int64.
        RuntimeError: list rows of different lengths (naming the field and the lengths).
    """
    if all(isinstance(row, torch.Tensor) for row in rows):
        return with_batch_axis(torch.stack([torch.as_tensor(row) for row in rows]))
    arrays = [_int_row(row, field, index) for index, row in enumerate(rows)]
    lengths = {len(row) for row in rows}
    if len(lengths) > 1:  # [thdcoll-prepacked]: items of different lengths -> RuntimeError
        raise RuntimeError(f"{field}: prepacked items must share one length to stack, got lengths {sorted(lengths)}")
    return torch.from_numpy(np.stack(arrays))


# --- default_collater -------------------------------------------------------------------------


def _default_collater_fast(batch: Sequence[Mapping[str, Any]], pad_seq_len_divisible: Any) -> dict[str, Any]:
    first = batch[0]
    overrides = first.get(PAD_TOKEN_IDS_KEY)
    result: dict[str, Any] = {}
    padded: dict[str, np.ndarray] = {}  # the list fields' arrays, for padding_mask
    for key in first:
        if key == PAD_TOKEN_IDS_KEY:
            continue
        values = [item[key] for item in batch]
        field = batched_field(values)  # tensors and scalars: the reference's (already whole-batch)
        if field is None:
            padded[key] = _pad_int_lists(values, _list_pad(key, values, overrides), key, pad_seq_len_divisible)
            field = torch.from_numpy(padded[key])
        result[key] = field

    # [dcoll-padding-mask] By position when there is an attention mask, else by pad id (on the
    # int64 array of a list field: ``== 0`` is ``~bool()``).
    if "attention_mask" in result:
        if "attention_mask" in padded:
            result["padding_mask"] = torch.from_numpy(padded["attention_mask"] == 0)
        else:
            result["padding_mask"] = ~result["attention_mask"].bool()
    elif "input_ids" in result:
        input_ids_pad = collater_pad_value("input_ids", overrides) or 0
        if "input_ids" in padded:  # the list path took a plain int pad (None here reads as 0)
            result["padding_mask"] = torch.from_numpy(padded["input_ids"] == input_ids_pad)
        else:
            result["padding_mask"] = (result["input_ids"] == input_ids_pad).bool()
    return result


def _non_list_row(batch: Sequence[Mapping[str, Any]], pad_seq_len_divisible: Any) -> bool:
    return any(type(row) is not list for _, rows in _list_fields(batch) for row in rows)


def _odd_divisor(batch: Sequence[Mapping[str, Any]], pad_seq_len_divisible: Any) -> bool:
    return any(odd_width(max(map(len, rows)), pad_seq_len_divisible) for _, rows in _list_fields(batch))


def _non_int64_pad(batch: Sequence[Mapping[str, Any]], pad_seq_len_divisible: Any) -> bool:
    overrides = batch[0].get(PAD_TOKEN_IDS_KEY)
    for key, rows in _list_fields(batch):
        if collater_pad_value(key, overrides) is None and not rows[0]:
            return False  # IndexError, raised by the fast path as by the reference
        if not _is_int64_pad(_list_pad(key, rows, overrides)):
            return True
    return False


def _non_int64_values(batch: Sequence[Mapping[str, Any]], pad_seq_len_divisible: Any) -> bool:
    return not all(_int_values(row) for _, rows in _list_fields(batch) for row in rows)


_DEFAULT_COLLATER = (
    ("non-list-row", _non_list_row),
    ("odd-divisor", _odd_divisor),
    ("non-int64-pad", _non_int64_pad),
    ("non-int64-values", _non_int64_values),
)


def default_collater(
    batch: Sequence[Mapping[str, Any]],
    pad_seq_len_divisible: int | None = None,
) -> dict[str, Any]:
    """``batchspec.reference.collaters.default_collater``, vectorized (SPEC.md section 8, "The
    canonical collaters": keys, pads, dtypes, errors and clauses are there).

    Lists of int64 ints are padded with whole-batch numpy operations (``_pad_int_lists``); the
    inputs of ``DELEGATIONS["default_collater"]`` (a non-list row, a float or negative divisor,
    a pad value that is not an int64 int, list values that are not int64 ints) are computed by
    the reference function. The items are never modified (D-6).
    """
    if paths.choose("default_collater", _DEFAULT_COLLATER, batch, pad_seq_len_divisible):
        return _reference.default_collater(batch, pad_seq_len_divisible)
    return _default_collater_fast(batch, pad_seq_len_divisible)


# --- packed_sequence_thd_collater -----------------------------------------------------------------


def _real_tokens(item: Mapping[str, Any], length: int) -> int | None:
    """``sum(attention_mask)`` of a synthesized item, or its length without a mask
    [thdcoll-synthesized]; None for a mask that is not a list of ints or a 1-D CPU tensor of
    an integer or bool dtype."""
    if "attention_mask" not in item:
        return length
    mask = item["attention_mask"]
    if type(mask) is list:
        total = sum(mask)  # C-level sum of the item's list
        return total if type(total) is int else None
    if type(mask) is torch.Tensor and mask.ndim == 1 and mask.device.type == "cpu":
        if mask.shape[0] == 0:
            return 0  # sum() of no element, whatever the dtype (torch.tensor([]) is float32)
        # The reference adds the 0-D elements one by one (``sum(mask)``): bool promotes to int64,
        # an integer dtype keeps its width and wraps around; the cast of the exact sum does the same.
        if mask.dtype == torch.bool:
            return int(mask.sum())
        if mask.dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
            return int(mask.sum().to(mask.dtype))
    return None


def _synthesized(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """[thdcoll-synthesized] Each item is one sequence, right-padded to the longest item."""
    ids_rows = [item["input_ids"] for item in batch]
    label_rows = [item["labels"] for item in batch]
    lengths = [len(row) for row in ids_rows]
    width = max(lengths)
    input_ids_pad = collater_pad_value("input_ids", batch[0].get(PAD_TOKEN_IDS_KEY)) or 0
    real_tokens = [_real_tokens(item, length) for item, length in zip(batch, lengths)]
    return thd_batch(
        torch.from_numpy(_scatter_rows(ids_rows, lengths, width, input_ids_pad, "input_ids")),
        torch.from_numpy(_scatter_rows(label_rows, lengths, width, CROSS_ENTROPY_IGNORE_IDX, "labels")),
        torch.from_numpy(np.tile(np.arange(width, dtype=np.int64), (len(batch), 1))),
        torch.tensor(real_tokens, dtype=torch.int64).unsqueeze(1),
        torch.full((len(batch), 1), width, dtype=torch.int64),
    )


def _prepacked(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """[thdcoll-prepacked] Token fields stack to [B, L]; lengths pad to the most sequences."""
    stacked = [_stack_rows([item[field] for item in batch], field) for field in _TOKEN_FIELDS]
    lengths = [torch.from_numpy(_pad_int_lists([item[f] for item in batch], THD_LENGTH_PAD, f)) for f in _LENGTH_FIELDS]
    return thd_batch(*stacked, *lengths)


def _packed_sequence_thd_collater_fast(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    if len(batch) == 0:
        return {}
    return _prepacked(batch) if "seq_lens" in batch[0] else _synthesized(batch)


def _is_prepacked(batch: Sequence[Mapping[str, Any]]) -> bool:
    return len(batch) > 0 and "seq_lens" in batch[0]


def _is_synthesized(batch: Sequence[Mapping[str, Any]]) -> bool:
    return len(batch) > 0 and "seq_lens" not in batch[0]


def _token_rows(batch: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """The prepacked token fields' rows, one list per field (none for synthesis)."""
    return [[item[field] for item in batch] for field in _TOKEN_FIELDS] if _is_prepacked(batch) else []


def _empty_or_non_list_token_rows(batch: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        not all(isinstance(row, torch.Tensor) for row in rows)
        and (any(type(row) is not list for row in rows) or not rows[0])
        for rows in _token_rows(batch)
    )


def _non_int64_token_rows(batch: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        not all(isinstance(row, torch.Tensor) for row in rows) and not all(_int_values(row) for row in rows)
        for rows in _token_rows(batch)
    )


def _length_rows(batch: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Every ``seq_lens`` / ``seq_lens_padded`` row of a prepacked batch."""
    return [item[field] for field in _LENGTH_FIELDS for item in batch] if _is_prepacked(batch) else []


def _non_list_length_row(batch: Sequence[Mapping[str, Any]]) -> bool:
    return any(type(row) is not list for row in _length_rows(batch))


def _non_int64_lengths(batch: Sequence[Mapping[str, Any]]) -> bool:
    return not all(_int_values(row) for row in _length_rows(batch))


def _all_items_empty(batch: Sequence[Mapping[str, Any]]) -> bool:
    return _is_synthesized(batch) and max(len(item["input_ids"]) for item in batch) == 0


def _non_int64_ids_pad(batch: Sequence[Mapping[str, Any]]) -> bool:
    if not _is_synthesized(batch):
        return False
    return not _is_int64_pad(collater_pad_value("input_ids", batch[0].get(PAD_TOKEN_IDS_KEY)) or 0)


def _labels_of_another_length(batch: Sequence[Mapping[str, Any]]) -> bool:
    return _is_synthesized(batch) and any(len(item["labels"]) != len(item["input_ids"]) for item in batch)


def _synthesized_rows(batch: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The non-empty ``input_ids`` and ``labels`` rows of a synthesized batch."""
    if not _is_synthesized(batch):
        return []
    return [item[field] for item in batch for field in ("input_ids", "labels") if len(item[field])]


def _tensor_row_not_cpu_int64(batch: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        isinstance(row, torch.Tensor)
        and (type(row) is not torch.Tensor or row.dtype != torch.int64 or row.ndim != 1 or row.device.type != "cpu")
        for row in _synthesized_rows(batch)
    )


def _non_list_synthesized_row(batch: Sequence[Mapping[str, Any]]) -> bool:
    return any(type(row) is not list and not isinstance(row, torch.Tensor) for row in _synthesized_rows(batch))


def _non_int64_synthesized_values(batch: Sequence[Mapping[str, Any]]) -> bool:
    return not all(_int_values(row) for row in _synthesized_rows(batch) if type(row) is list)


def _non_int_mask(batch: Sequence[Mapping[str, Any]]) -> bool:
    return _is_synthesized(batch) and any(_real_tokens(item, len(item["input_ids"])) is None for item in batch)


_PACKED_SEQUENCE_THD_COLLATER = (
    # prepacked items
    ("empty-or-non-list-token-rows", _empty_or_non_list_token_rows),
    ("non-int64-token-rows", _non_int64_token_rows),
    ("non-list-length-row", _non_list_length_row),
    ("non-int64-lengths", _non_int64_lengths),
    # items to synthesize
    ("all-items-empty", _all_items_empty),
    ("non-int64-pad", _non_int64_ids_pad),
    ("labels-of-another-length", _labels_of_another_length),
    ("tensor-row-not-cpu-int64", _tensor_row_not_cpu_int64),
    ("non-list-row", _non_list_synthesized_row),
    ("non-int64-values", _non_int64_synthesized_values),
    ("non-int-mask", _non_int_mask),
)


def packed_sequence_thd_collater(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``batchspec.reference.collaters.packed_sequence_thd_collater``, vectorized (SPEC.md
    section 8, "The canonical collaters": keys, pads, dtypes, errors and clauses are there).

    Int lists (and, in synthesis mode, 1-D CPU int64 tensors) are padded and stacked with
    whole-batch numpy/torch operations; the inputs of ``DELEGATIONS["packed_sequence_thd_collater"]``
    (empty, non-list or non-int64 rows, all items empty, an odd pad value, labels of another
    length, a mask that is not ints) are computed by the reference function. The items are
    never modified (D-6).
    """
    if paths.choose("packed_sequence_thd_collater", _PACKED_SEQUENCE_THD_COLLATER, batch):
        return _reference.packed_sequence_thd_collater(batch)
    return _packed_sequence_thd_collater_fast(batch)


# function -> its delegations, in the order they are checked (backends/vectorized/README.md)
DELEGATIONS: dict[str, paths.Delegations] = {
    "default_collater": _DEFAULT_COLLATER,
    "packed_sequence_thd_collater": _PACKED_SEQUENCE_THD_COLLATER,
}


# --- pack_features_for_thd ------------------------------------------------------------------------


def pack_features_for_thd(
    features: Sequence[Mapping[str, Any]], *, ignore_index: int = CROSS_ENTROPY_IGNORE_IDX
) -> dict[str, list]:
    """``batchspec.reference.collaters.pack_features_for_thd``, vectorized (SPEC.md section 8,
    "The canonical collaters": the record, errors and their order, clauses are there).

    The lists are joined with ``itertools.chain`` (C-level, no Python loop over tokens); the
    features and their lists are never modified.
    """
    if not features:
        raise ValueError("pack_features_for_thd requires at least one feature")

    id_rows: list[Any] = []
    label_rows: list[Any] = []
    seq_lens: list[int] = []
    for feature in features:
        ids = feature["input_ids"]
        if type(ids) is not list:
            ids = list(ids)  # a tensor contributes its 0-D elements, as the reference's list()
        if not ids:
            raise ValueError("cannot pack an empty sequence")
        length = len(ids)
        if "labels" in feature:
            feature_labels = feature["labels"]
            if type(feature_labels) is not list:
                feature_labels = list(feature_labels)
            if len(feature_labels) != length:
                raise ValueError(f"labels length {len(feature_labels)} does not match input_ids length {length}")
        else:
            feature_labels = repeat(ignore_index, length)  # no labels: no loss on this feature
        id_rows.append(ids)
        label_rows.append(feature_labels)
        seq_lens.append(length)

    return {
        "input_ids": list(chain.from_iterable(id_rows)),
        "labels": list(chain.from_iterable(label_rows)),
        "position_ids": list(chain.from_iterable(map(range, seq_lens))),  # restart at every feature
        "seq_lens": seq_lens,
        "seq_lens_padded": list(seq_lens),
    }
