"""``convert_text_batch`` with its per-token work in Triton kernels (SPEC.md section 4).

The records are read by ``vectorized``'s public host glue (``records.read_records``: option and
record checks, one bulk int64 conversion per field, the rows placed into ``[B, L]``). The
kernels then compute, one program per row (the scan) or per row and ``BLOCK`` of columns:

* ``default_positions_kernel``: positions of the rows without given positions [ctb-positions];
* ``document_scan_kernel``: a segmented scan per row giving the document ids and the targets'
  segment starts, carrying its count across block edges [ctb-document-ids, ctb-segment-starts];
* ``shifted_labels_kernel``: the shifted labels with ``ignore_index`` and the padding mask
  [ctb-shift, ctb-padding-labels, ctb-ignore-index, ctb-padding-mask];
* ``xdoc_positions`` (``document_max_kernel``, ``document_offsets_kernel``,
  ``xdoc_shift_kernel``): the cross-document positions and their largest value [xdoc-positions,
  xdoc-contract];
* ``id_counts`` (``id_counts_kernel``), ``thd_lengths`` (``thd_lengths_kernel``) and
  ``packed_cu_seqlens`` (``row_cu_seqlens_kernel``): the THD lengths and the metadata bundle
  [thd-lengths, meta-indices, meta-cu-seqlens, meta-max-seqlen];
* ``block_causal_mask`` (``block_causal_kernel``, one program per row and tile): the
  ``block_causal`` mask [batched-block-causal].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import torch
import triton

from batchspec.backends.triton import kernels
from batchspec.backends.triton.placement import kernel_device
from batchspec.backends.vectorized.attention import xdoc_bound_error
from batchspec.backends.vectorized.records import as_batch, is_int, place_rows, read_records, row_width
from batchspec.backends.vectorized.rules import check_convert_options, output_device, sample_records
from batchspec.reference.contract import THD_LENGTH_PAD, PackedSequenceContract, contract_requests_metadata

__all__ = ["block_causal_mask", "convert_text_batch", "document_ids_and_starts", "shifted_labels", "xdoc_positions"]


def block_causal_mask(ids: torch.Tensor) -> torch.Tensor:
    """bool ``[B, 1, S, S]``: ``mask[b, 0, q, k]`` iff ``k <= q`` and ``ids[b, q] == ids[b, k] > 0``
    [batched-block-causal], for int64 ids ``[B, S]``; one ``block_causal_kernel`` program per row,
    query tile and key tile."""
    batch, sequence = ids.shape
    mask = torch.empty(batch, 1, sequence, sequence, dtype=torch.bool, device=ids.device)
    tiles = triton.cdiv(sequence, kernels.TILE)
    kernels.block_causal_kernel[(batch, tiles, tiles)](ids.contiguous(), mask, sequence, TILE=kernels.TILE)
    return mask


# packed_mask_type -> the batched attention_mask built from the selected ids [batched-block-causal],
# [batched-document-ids-mask]
_PACKED_MASKS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "block_causal": block_causal_mask,
    "document_ids": torch.Tensor.clone,
}


def xdoc_positions(positions: torch.Tensor, documents: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(shifted int64 [B, S], largest int64 [1])`` for int64 ``positions`` and ``documents``
    ``[B, S]`` (ids in ``[0, S]``): a token of document ``d > 0`` moves up by the sum over the
    row's documents below ``d`` of (their largest position + 1); ``largest`` is the largest moved
    position (-1 when none) [xdoc-positions, xdoc-contract]."""
    batch, sequence = positions.shape
    positions, documents = positions.contiguous(), documents.contiguous()
    width = sequence + 1
    blocks = (batch, triton.cdiv(sequence, kernels.BLOCK))
    table = torch.full((batch, width), -1, dtype=torch.int64, device=positions.device)
    kernels.document_max_kernel[blocks](positions, documents, table, sequence, width, BLOCK=kernels.BLOCK)
    offsets = torch.empty_like(table)
    kernels.document_offsets_kernel[(batch,)](table, offsets, width, BLOCK=kernels.BLOCK)
    shifted = torch.empty_like(positions)
    largest = torch.full((1,), -1, dtype=torch.int64, device=positions.device)
    kernels.xdoc_shift_kernel[blocks](
        positions, documents, offsets, shifted, largest, sequence, width, BLOCK=kernels.BLOCK
    )
    return shifted, largest


def id_counts(ids: torch.Tensor, write_indices: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(counts int64 [B, S + 1], spans int64 [B], indices int64 [B, S])`` of int64 ids ``[B, S]``
    in ``[0, S]``: tokens per id (column 0 the zeros), the row's largest id, and with
    ``write_indices`` ``packed_token_indices`` [thd-lengths, meta-cu-seqlens, meta-indices]."""
    batch, sequence = ids.shape
    ids = ids.contiguous()
    counts = torch.zeros(batch, sequence + 1, dtype=torch.int64, device=ids.device)
    spans = torch.zeros(batch, dtype=torch.int64, device=ids.device)
    indices = torch.empty(batch, sequence if write_indices else 0, dtype=torch.int64, device=ids.device)
    grid = (batch, triton.cdiv(sequence, kernels.BLOCK))
    kernels.id_counts_kernel[grid](
        ids, counts, spans, indices, sequence, write_indices=write_indices, BLOCK=kernels.BLOCK
    )
    return counts, spans, indices


def thd_lengths(counts: torch.Tensor, spans: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``seq_lens`` and ``seq_lens_padded`` (int64 ``[B, width]``, ``THD_LENGTH_PAD`` after a row's
    spans) from ``id_counts``; the row's trailing zeros join its last span [thd-lengths]."""
    batch, sequence = counts.shape[0], counts.shape[1] - 1
    seq_lens = torch.empty(batch, width, dtype=torch.int64, device=counts.device)
    padded = torch.empty_like(seq_lens)
    grid = (batch, triton.cdiv(width, kernels.BLOCK))
    kernels.thd_lengths_kernel[grid](
        counts, spans, seq_lens, padded, sequence, width, THD_LENGTH_PAD, BLOCK=kernels.BLOCK
    )
    return seq_lens, padded


def packed_cu_seqlens(counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cu_seqlens int32 [B, S + 1], longest int64 [1])`` from ``id_counts``: each row's running
    span totals packed to the front, -1 after them, and the largest span [meta-cu-seqlens,
    meta-max-seqlen]; the caller keeps the first ``max(1, largest id) + 1`` columns."""
    batch, width = counts.shape
    cu_seqlens = torch.full((batch, width), -1, dtype=torch.int32, device=counts.device)
    cu_seqlens[:, 0] = 0
    longest = torch.zeros(1, dtype=torch.int64, device=counts.device)
    kernels.row_cu_seqlens_kernel[(batch,)](counts, cu_seqlens, longest, width, BLOCK=kernels.BLOCK)
    return cu_seqlens, longest


def default_positions(first_pad: torch.Tensor, width: int) -> torch.Tensor:
    """int64 ``[B, width]``: each row counts 0.. over its real tokens and restarts at 0 at its
    first pad column ``first_pad[b]`` (int64 ``[B]``) [ctb-positions, unpacked-padding]."""
    batch = first_pad.shape[0]
    positions = torch.empty(batch, width, dtype=torch.int64, device=first_pad.device)
    grid = (batch, triton.cdiv(width, kernels.BLOCK))
    kernels.default_positions_kernel[grid](first_pad, positions, width, BLOCK=kernels.BLOCK)
    return positions


def document_ids_and_starts(positions: torch.Tensor, first_pad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(document_ids int64 [B, S], starts bool [B, S])`` of unshifted int64 ``positions``
    ``[B, S + 1]``: ``document_ids`` numbers the row's documents 1.. from each position 0 and is
    0 from the row's first pad column on; ``starts[b, i]`` is ``positions[b, i + 1] == 0``
    [ctb-boundaries-from-zeros, ctb-document-ids, ctb-segment-starts]."""
    batch, width = positions.shape
    sequence = width - 1
    positions = positions.contiguous()
    documents = torch.empty(batch, sequence, dtype=torch.int64, device=positions.device)
    starts = torch.empty(batch, sequence, dtype=torch.bool, device=positions.device)
    kernels.document_scan_kernel[(batch,)](
        positions, first_pad, documents, starts, sequence, positions.stride(0), BLOCK=kernels.BLOCK
    )
    return documents, starts


def shifted_labels(
    tokens: torch.Tensor, starts: torch.Tensor, first_pad: torch.Tensor, ignore_index: int, mask_segment_starts: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(labels int64 [B, S], padding_mask bool [B, S])`` of unshifted int64 ``tokens``
    ``[B, S + 1]`` [ctb-shift, ctb-padding-labels, ctb-cross-document-targets, ctb-segment-starts,
    ctb-ignore-index, ctb-padding-mask]."""
    batch, width = tokens.shape
    sequence = width - 1
    tokens = tokens.contiguous()
    labels = torch.empty(batch, sequence, dtype=torch.int64, device=tokens.device)
    padding_mask = torch.empty(batch, sequence, dtype=torch.bool, device=tokens.device)
    grid = (batch, triton.cdiv(sequence, kernels.BLOCK))
    kernels.shifted_labels_kernel[grid](
        tokens,
        starts,
        first_pad,
        labels,
        padding_mask,
        sequence,
        tokens.stride(0),
        ignore_index,
        mask_segment_starts=mask_segment_starts,
        BLOCK=kernels.BLOCK,
    )
    return labels, padding_mask


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
    """``batchspec.reference.convert.convert_text_batch`` with its positions, document ids,
    segment starts, labels and padding mask from Triton kernels (SPEC.md section 4,
    "``convert_text_batch``", and section 3's field table: outputs, shapes, dtypes, errors and
    clauses are there). Errors are ``vectorized``'s host checks, raised as SPEC names them.
    """
    check_convert_options(
        output_format, ignore_index, mask_segment_starts, allow_cross_document_attention, pad_to_length, pad_token_id
    )
    records = sample_records(sample_batch)
    rows = read_records(records)
    batch = len(rows.lengths)
    width = row_width(rows.lengths, pad_to_length)  # [unpacked-padding, ctb-input-errors] 7, 8
    device = output_device(rows.given)  # [tb-device]; the kernels run on kernel_device(device)
    tokens, positions, first_pad, reads = _rows_on_device(rows, width, pad_token_id, kernel_device(device))

    document_ids, starts = document_ids_and_starts(positions, first_pad)
    labels, padding_mask = shifted_labels(tokens, starts, first_pad, ignore_index, mask_segment_starts)
    sequence = width - 1
    out: dict[str, Any] = {
        "input_ids": tokens[:, :sequence].clone(),
        "labels": labels,
        "position_ids": positions[:, :sequence].clone(),
        "padding_mask": padding_mask,
        "document_ids": document_ids,
        "attention_document_ids": document_ids.clone(),  # [ctb-attention-ids]
    }
    bound = getattr(packing_contract, "max_sequence_length", None)  # [xdoc-contract]
    if allow_cross_document_attention:  # [ctb-xdoc] via enable_xdoc_attention's semantics
        out["position_ids"], largest_shifted = xdoc_positions(out["position_ids"], document_ids)
        out["attention_document_ids"] = (document_ids > 0).to(torch.int64)
        if is_int(bound):
            reads.append(largest_shifted)
    selected = out["attention_document_ids"]
    wants_metadata = output_format == "batched" and contract_requests_metadata(packing_contract)
    if output_format == "thd" or wants_metadata:
        counts, spans, indices = id_counts(selected, write_indices=wants_metadata)
        reads.append(spans.amax()[None])
        if wants_metadata:
            cu_seqlens, longest = packed_cu_seqlens(counts)
            reads.append(longest)

    rest = _check_device_reads(reads, batch, allow_cross_document_attention and is_int(bound), bound)
    if output_format == "thd":
        seq_lens, seq_lens_padded = thd_lengths(counts, spans, rest[0])
        out.update(seq_lens=seq_lens, seq_lens_padded=seq_lens_padded, qkv_format="thd")
        return _moved(out, device)
    out["_packed_seq_ids"] = selected.clone()
    mask_type = packing_contract.packed_mask_type
    if mask_type not in _PACKED_MASKS:
        raise ValueError(f"packing_contract.packed_mask_type {mask_type!r} is not one of {sorted(_PACKED_MASKS)}")
    out["attention_mask"] = _PACKED_MASKS[mask_type](selected)
    if wants_metadata:
        largest_id, max_seqlen = rest
        out["packed_token_indices"] = indices
        out["cu_seqlens"] = cu_seqlens[:, : max(1, largest_id) + 1].contiguous()
        out["max_seqlen"] = int(max_seqlen)
    return _moved(out, device)


def _moved(out: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """``out`` with every tensor on the outputs' ``device`` [tb-device]: the same tensors where
    the kernels ran there, copies where they ran on a staging device (``kernel_device``)."""
    return {key: value.to(device) if isinstance(value, torch.Tensor) else value for key, value in out.items()}


def _rows_on_device(
    rows: Any, width: int, pad_token_id: int | None, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """The rows' tokens and positions as ``[B, width]`` int64 on ``device`` (where the kernels
    run), the first pad column of each row (unshifted), and the device reads queued so far: the
    per-row flags ``bad_start`` and ``negative`` of [ctb-input-errors] 10 (read back in
    ``_check_device_reads``)."""
    batch = len(rows.lengths)
    same_length = all(length == width for length in rows.lengths)
    lengths = torch.tensor(rows.lengths, device=device)
    first_pad = lengths - torch.tensor(rows.padding, device=device)  # first pad column, unshifted

    tokens_flat = as_batch(rows.tokens, device)
    if same_length:
        tokens = tokens_flat.view(batch, width)
    else:
        # rows of different lengths come only with pad_to_length, hence pad_token_id [unpacked-pad-token-only-with-length]
        fill = torch.full((batch, width), cast(int, pad_token_id), dtype=torch.int64, device=device)
        tokens = place_rows(tokens_flat, lengths, batch, width, fill)

    # Positions [ctb-positions, unpacked-padding]: the kernel's for rows without positions, the
    # given ones placed over their rows' front.
    if len(rows.with_positions) == batch and same_length:
        positions = as_batch(rows.positions, device).view(batch, width)
        given: Any = slice(None)
    else:
        positions = default_positions(first_pad, width)
        given = torch.tensor(rows.with_positions, dtype=torch.int64, device=device)
        if rows.with_positions:
            flat = as_batch(rows.positions, device)
            positions[given] = place_rows(flat, lengths[given], len(rows.with_positions), width, positions[given])
    bad_start = torch.zeros(batch, dtype=torch.bool, device=device)
    negative = torch.zeros(batch, dtype=torch.bool, device=device)
    bad_start[given] = positions[given, 0] != 0
    negative[given] = (positions[given] < 0).any(dim=1)
    return tokens, positions, first_pad, [bad_start, negative]


def _check_device_reads(reads: list[torch.Tensor], batch: int, checks_bound: bool, bound: Any) -> list[int]:
    """Read every queued value back in one transfer and raise the positions faults of
    [ctb-input-errors] 10 (naming the record), then the xdoc bound [xdoc-contract] when
    ``checks_bound``. Returns the values read after those (the route's span counts)."""
    values = torch.cat([r.to(torch.int64) for r in reads]).tolist()
    flags_start, flags_negative, rest = values[:batch], values[batch : 2 * batch], values[2 * batch :]
    if any(flags_start):
        raise ValueError(f"sample_batch record {flags_start.index(1)}: positions must start at 0")
    if any(flags_negative):
        raise ValueError(f"sample_batch record {flags_negative.index(1)}: positions must be >= 0")
    if checks_bound:
        largest, rest = rest[0], rest[1:]
        if largest >= bound:
            raise xdoc_bound_error(largest, bound)
    return rest
