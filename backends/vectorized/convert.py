"""``convert_text_batch`` as whole-batch tensor work.

Cost model (B rows of L unshifted tokens, S = L - 1):

* ingest: one pass over the B record objects; each field becomes an int64 array with one bulk
  conversion (``np.asarray`` of a list or array, ``Tensor.to`` of a tensor) whose dtype
  answers the bool/float/non-integer questions, then one ``torch.cat`` for the batch;
* validation: whole-batch reductions, read back together with the outputs' host values;
* shift, labels, masks, document ids: a fixed number of ``[B, S]`` element-wise passes;
* xdoc: one ``scatter_reduce`` into ``[B, S + 1]``, a ``cumsum`` and a ``gather``;
* metadata / THD lengths: one ``scatter_add`` into ``[B, S + 1]`` (span sizes) and a ``cumsum``
  over the row's spans; no ``[documents, S]`` temporary, no sort;
* ``block_causal``: one broadcast comparison and one in-place ``tril_``.

The number of torch operator calls depends on the options only, never on B's contents: not on
the documents per row, their lengths, or the values. On CUDA (tensor payloads on the device)
the function reads the device exactly once, a few scalars at the end: the validation flags,
and the largest id / ``max_seqlen`` the output shapes and the Python ``int`` need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from batchspec.backends.vectorized.attention import xdoc_bound_error, xdoc_positions
from batchspec.backends.vectorized.metadata import metadata_from_spans, monotone_row_spans
from batchspec.backends.vectorized.output import block_causal_mask, thd_lengths_from_spans
from batchspec.backends.vectorized.records import RecordRows, as_batch, is_int, place_rows, read_records, row_width
from batchspec.backends.vectorized.rules import check_convert_options, output_device, sample_records
from batchspec.reference.contract import PackedSequenceContract, contract_requests_metadata

__all__ = ["convert_text_batch"]

# packed_mask_type -> the batched attention_mask built from the selected ids [batched-block-causal],
# [batched-document-ids-mask]
_PACKED_MASKS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "block_causal": block_causal_mask,
    "document_ids": torch.Tensor.clone,
}


class _DeviceReads:
    """The device values the outputs' checks and shapes need, read back together in one
    transfer [ctb-input-errors] 10, [xdoc-errors], [meta-max-seqlen]; each by name, with the
    number of values its 1-D tensor holds (known on the host)."""

    def __init__(self) -> None:
        self._parts: dict[str, torch.Tensor] = {}

    def add(self, name: str, values: torch.Tensor) -> None:
        self._parts[name] = values.reshape(-1)

    def read(self) -> dict[str, list[int]]:
        """Every value added, as Python ints, by name (one device read)."""
        if not self._parts:
            return {}
        values = torch.cat([part.to(torch.int64) for part in self._parts.values()]).tolist()
        out: dict[str, list[int]] = {}
        for name, part in self._parts.items():
            out[name], values = values[: part.shape[0]], values[part.shape[0] :]
        return out


class _Layout:
    """Where the rows' tokens lie in the ``[B, width]`` batch, on the outputs' device."""

    def __init__(self, rows: RecordRows, width: int, device: torch.device) -> None:
        self.batch = len(rows.lengths)
        self.width = width
        self.device = device
        self.same_length = all(length == width for length in rows.lengths)
        self.lengths = torch.tensor(rows.lengths, device=device)
        # First pad index of each row (unshifted): the padding suffix, grown by pad_to_length.
        self.first_pad = self.lengths - torch.tensor(rows.padding, device=device)
        self.columns = torch.arange(width, device=device)


def _tokens(rows: RecordRows, layout: _Layout, pad_token_id: int | None) -> torch.Tensor:
    """The token rows as int64 ``[B, width]``, right-padded with ``pad_token_id`` on the
    unpacked route [unpacked-padding]."""
    flat = as_batch(rows.tokens, layout.device)
    if layout.same_length:
        return flat.view(layout.batch, layout.width)
    if pad_token_id is None:  # unreachable: rows differ only with pad_to_length, which rules.py checks needs it
        raise ValueError("pad_token_id is required with pad_to_length, got None")
    fill = torch.full((layout.batch, layout.width), pad_token_id, dtype=torch.int64, device=layout.device)
    return place_rows(flat, layout.lengths, layout.batch, layout.width, fill)


def _positions(rows: RecordRows, layout: _Layout, reads: _DeviceReads) -> torch.Tensor:
    """int64 ``[B, width]`` positions [ctb-positions, unpacked-padding]: a record without
    positions counts 0.. over its real tokens and restarts at 0 over its pad tail; the unpacked
    route's appended pad tokens continue that tail. Given positions then overwrite their rows'
    front. Adds the flags of [ctb-input-errors] 10 to ``reads`` (``bad_start``, ``negative``)."""
    batch, width, device = layout.batch, layout.width, layout.device
    given: slice | torch.Tensor
    if len(rows.with_positions) == batch and layout.same_length:
        positions = as_batch(rows.positions, device).view(batch, width)
        given = slice(None)
    else:
        first_pad = layout.first_pad[:, None]
        columns = layout.columns
        positions = torch.where(columns >= first_pad, columns - first_pad, columns)
        given = torch.tensor(rows.with_positions, dtype=torch.int64, device=device)
        if rows.with_positions:
            flat = as_batch(rows.positions, device)
            positions[given] = place_rows(
                flat, layout.lengths[given], len(rows.with_positions), width, positions[given]
            )
    bad_start = torch.zeros(batch, dtype=torch.bool, device=device)
    negative = torch.zeros(batch, dtype=torch.bool, device=device)
    bad_start[given] = positions[given, 0] != 0
    negative[given] = (positions[given] < 0).any(dim=1)
    reads.add("bad_start", bad_start)
    reads.add("negative", negative)
    return positions


def _shifted_fields(
    tokens: torch.Tensor, positions: torch.Tensor, layout: _Layout, ignore_index: int, mask_segment_starts: bool
) -> dict[str, Any]:
    """Shift, labels, masks, document ids [ctb-shift .. ctb-document-ids], each ``[B, S]``."""
    sequence = layout.width - 1
    index = layout.columns[:sequence]
    first_pad = layout.first_pad[:, None]
    target_is_padding = (index + 1) >= first_pad
    if mask_segment_starts:
        target_is_padding = target_is_padding | (positions[:, 1:] == 0)
    padding_mask = index >= first_pad
    position_ids = positions[:, :sequence].clone()
    document_ids = torch.where(padding_mask, 0, (position_ids == 0).cumsum(dim=1))
    return {
        "input_ids": tokens[:, :sequence].clone(),
        "labels": torch.where(target_is_padding, ignore_index, tokens[:, 1:]),
        "position_ids": position_ids,
        "padding_mask": padding_mask,
        "document_ids": document_ids,
        "attention_document_ids": document_ids.clone(),  # [ctb-attention-ids]
    }


def _xdoc_bound(packing_contract: PackedSequenceContract) -> int | None:
    """The contract's ``max_sequence_length`` when it is an int (the xdoc bound), else None."""
    bound = getattr(packing_contract, "max_sequence_length", None)
    return bound if is_int(bound) else None


def _cross_document(out: dict[str, Any], packing_contract: PackedSequenceContract, reads: _DeviceReads) -> None:
    """[ctb-xdoc] ``enable_xdoc_attention``'s semantics on ``out``: positions continue across
    documents, every real token attends as one; adds the largest position (``xdoc_largest``)
    to ``reads`` when the contract bounds it."""
    document_ids = out["document_ids"]
    translated = document_ids > 0
    width = document_ids.shape[1] + 1
    out["position_ids"] = xdoc_positions(out["position_ids"][None], document_ids, translated, width)[0]
    out["attention_document_ids"] = translated.to(torch.int64)
    if _xdoc_bound(packing_contract) is not None:
        reads.add("xdoc_largest", torch.where(translated, out["position_ids"], -1).amax())


def _check_reads(values: dict[str, list[int]], packing_contract: PackedSequenceContract) -> None:
    """The errors found on the device, in SPEC order [ctb-input-errors] 10, [xdoc-errors]."""
    if any(values["bad_start"]):
        raise ValueError(f"sample_batch record {values['bad_start'].index(1)}: positions must start at 0")
    if any(values["negative"]):
        raise ValueError(f"sample_batch record {values['negative'].index(1)}: positions must be >= 0")
    bound = _xdoc_bound(packing_contract)
    if "xdoc_largest" in values and bound is not None and values["xdoc_largest"][0] >= bound:
        raise xdoc_bound_error(values["xdoc_largest"][0], bound)


def _batched_route(out: dict[str, Any], packing_contract: PackedSequenceContract) -> None:
    """[ctb-output-route] The batched route's packed ids and attention mask, from the selected
    ids [batched-block-causal, batched-document-ids-mask]."""
    selected = out["attention_document_ids"]
    out["_packed_seq_ids"] = selected.clone()
    mask_type = packing_contract.packed_mask_type
    if mask_type not in _PACKED_MASKS:
        raise ValueError(f"packing_contract.packed_mask_type {mask_type!r} is not one of {sorted(_PACKED_MASKS)}")
    out["attention_mask"] = _PACKED_MASKS[mask_type](selected)


def convert_text_batch(
    sample_batch: Any,
    packing_contract: PackedSequenceContract,
    ignore_index: int,
    mask_segment_starts: bool,
    allow_cross_document_attention: bool,
    output_format: str = "batched",
    pad_to_length: int | None = None,
    pad_token_id: int | None = None,
) -> dict:
    """``batchspec.reference.convert.convert_text_batch``, vectorized over the whole batch
    (SPEC.md section 4, "``convert_text_batch``", and section 3's field table: outputs,
    shapes, dtypes, errors and clauses are there).

    The cost model is this module's docstring: one pass over the records, a fixed number of
    ``[B, S]`` tensor passes whatever the rows hold, and one host read at the end (the
    positions checks of [ctb-input-errors] item 10, the xdoc bound and the scalars the output
    shapes need), so those errors are raised after the tensor work.
    """
    check_convert_options(
        output_format, ignore_index, mask_segment_starts, allow_cross_document_attention, pad_to_length, pad_token_id
    )
    rows = read_records(sample_records(sample_batch))
    layout = _Layout(rows, row_width(rows.lengths, pad_to_length), output_device(rows.given))
    reads = _DeviceReads()
    positions = _positions(rows, layout, reads)
    out = _shifted_fields(_tokens(rows, layout, pad_token_id), positions, layout, ignore_index, mask_segment_starts)
    if allow_cross_document_attention:
        _cross_document(out, packing_contract, reads)

    # The output route, from the selected ids [ctb-selected-ids, ctb-output-route].
    selected = out["attention_document_ids"]
    wants_metadata = output_format == "batched" and contract_requests_metadata(packing_contract)
    if output_format == "thd" or wants_metadata:
        counts, spans = monotone_row_spans(selected)
        reads.add("largest_id", spans.amax())  # the most documents in a row
        if wants_metadata:
            reads.add("max_seqlen", counts[:, 1:].amax())

    values = reads.read()  # the one host read
    _check_reads(values, packing_contract)
    if output_format == "thd":
        seq_lens, seq_lens_padded = thd_lengths_from_spans(counts, spans, values["largest_id"][0])
        out.update(seq_lens=seq_lens, seq_lens_padded=seq_lens_padded, qkv_format="thd")
        return out
    _batched_route(out, packing_contract)
    if wants_metadata:
        out.update(metadata_from_spans(selected, counts, spans, max(1, values["largest_id"][0]) + 1))
        out["max_seqlen"] = values["max_seqlen"][0]
    return out
