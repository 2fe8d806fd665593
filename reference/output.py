"""The model-facing output step of a converted batch.

Mirrors upstream ``nemo_automodel/components/datasets/zephon/output.py`` plus the
aliasing the loader applies before yielding (SPEC.md decision D-A3: ``convert_text_batch``
returns the final mapping): ``convert_batch_output`` adds the native THD lengths;
``apply_batched_output`` adds the batched route's mask, ``_packed_seq_ids`` and metadata.
"""

from __future__ import annotations

import torch

from batchspec.reference.contract import (
    BATCH_OUTPUT_FORMATS,
    THD_LENGTH_PAD,
    PackedSequenceContract,
    TrainingBatch,
    contract_requests_metadata,
)
from batchspec.reference.metadata import build_packed_sequence_metadata

__all__ = ["THD_LENGTH_PAD", "apply_batched_output", "block_causal_mask", "check_output_format", "convert_batch_output"]


def check_output_format(output_format: object) -> None:
    """Reject an unknown output format [types-output-format].

    Raises:
        ValueError: ``output_format`` is not ``"batched"`` or ``"thd"``.
    """
    if output_format not in BATCH_OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {list(BATCH_OUTPUT_FORMATS)}, got {output_format!r}")


def block_causal_mask(attention_document_ids: torch.Tensor) -> torch.Tensor:
    """Dense block-causal mask of row-local ids [batched-block-causal].

    Args:
        attention_document_ids: int64 ``[batch, sequence]``; 0 marks an excluded token.

    Returns:
        bool ``[batch, 1, sequence, sequence]``: ``mask[b, 0, q, k]`` is True iff
        ``k <= q`` and query and key carry the same positive id. A query with id 0 attends
        to nothing.
    """
    ids = attention_document_ids
    # query q (rows of the [S, S] block) and key k (columns), per batch row:
    same_document = ids[:, :, None] == ids[:, None, :]  # ids[b, q] == ids[b, k]
    real_query = ids[:, :, None] > 0  # padding and excluded tokens attend to nothing
    causal = torch.ones_like(same_document[0]).tril()  # k <= q
    mask = same_document & real_query & causal
    mask = mask[:, None, :, :]  # [batch, 1, sequence, sequence]
    return mask


def apply_batched_output(batch: TrainingBatch, packing_contract: PackedSequenceContract) -> TrainingBatch:
    """Add the batched route's model inputs [batched-packed-seq-ids, batched-block-causal,
    batched-document-ids-mask, batched-metadata].

    All three derive from the *selected* ``attention_document_ids`` ``[batch, sequence]``:

    * ``_packed_seq_ids``: int64 ``[batch, sequence]``, equal to ``attention_document_ids``;
    * ``attention_mask``: ``block_causal_mask(...)`` (bool ``[batch, 1, sequence, sequence]``)
      for ``packed_mask_type == "block_causal"``, or a copy of ``attention_document_ids``
      (int64 ``[batch, sequence]``) for ``"document_ids"``;
    * ``packed_token_indices``/``cu_seqlens``/``max_seqlen`` from
      ``build_packed_sequence_metadata`` when the contract requests metadata.

    Returns:
        The same mapping, updated; no existing tensor is modified.

    Raises:
        ValueError: unknown ``packed_mask_type``.
        TypeError: the contract's metadata request is missing or not a bool.
    """
    attention_document_ids = batch["attention_document_ids"]
    batch["_packed_seq_ids"] = attention_document_ids.clone()

    mask_type = packing_contract.packed_mask_type
    if mask_type == "block_causal":
        batch["attention_mask"] = block_causal_mask(attention_document_ids)
    elif mask_type == "document_ids":
        batch["attention_mask"] = attention_document_ids.clone()
    else:
        raise ValueError(
            f"packing_contract.packed_mask_type must be 'block_causal' or 'document_ids', got {mask_type!r}"
        )

    if contract_requests_metadata(packing_contract):
        batch.update(build_packed_sequence_metadata(attention_document_ids))
    return batch


def _row_runs(row_ids: list[int], row: int) -> tuple[list[int], int]:
    """Lengths of the runs of equal positive ids of one row, and its trailing zero count.

    Raises ValueError when an id is negative, a positive id follows a zero, an id reappears
    after another id, or the row has no positive id [thd-errors].
    """
    lengths: list[int] = []
    run_ids: list[int] = []
    trailing_zeros = 0
    for i, value in enumerate(row_ids):
        if value < 0:
            raise ValueError(f"convert_batch_output: row {row} has a negative attention id {value} at index {i}")
        if value == 0:
            trailing_zeros += 1
            continue
        if trailing_zeros:
            raise ValueError(
                f"convert_batch_output: row {row} has attention id {value} at index {i} after an excluded "
                "token; THD needs padding as a trailing suffix and no interior exclusion"
            )
        if run_ids and run_ids[-1] == value:
            lengths[-1] += 1
        elif value in run_ids:
            raise ValueError(
                f"convert_batch_output: row {row} attention id {value} reappears at index {i} after another id; "
                "ids must form contiguous runs"
            )
        else:
            run_ids.append(value)
            lengths.append(1)
    if not lengths:
        raise ValueError(f"convert_batch_output: row {row} has no token with a positive attention id")
    return lengths, trailing_zeros


def convert_batch_output(batch: TrainingBatch, output_format: str) -> TrainingBatch:
    """Add the output format's native inputs [thd-lengths, thd-qkv-format, thd-errors,
    batched-unchanged, types-output-format, tb-device, tb-layout, tb-no-aliasing].

    Args:
        batch: mapping with int64 ``attention_document_ids`` ``[batch, sequence]``: the
            *selected* ids (joined under xdoc), positive ids forming contiguous runs, 0 only as
            a trailing padding suffix.
        output_format: ``"batched"`` leaves the mapping unchanged; ``"thd"`` adds
            ``seq_lens`` and ``seq_lens_padded`` (int64 ``[batch, max runs]``, padded with
            ``THD_LENGTH_PAD`` = -1000) and ``qkv_format = "thd"``. ``seq_lens`` are the run
            lengths in stream order; ``seq_lens_padded`` adds the row's trailing padding to
            its last run, so its valid entries sum to the sequence length.

    Returns:
        The same mapping; no existing tensor is modified.

    Raises:
        ValueError: unknown format; for ``"thd"``, a negative id, a row with no positive id,
            a positive id after a zero, or an id that reappears after another id.
    """
    check_output_format(output_format)
    if output_format == "batched":
        return batch
    ids = batch["attention_document_ids"]
    seq_lens: list[list[int]] = []
    seq_lens_padded: list[list[int]] = []
    for b in range(ids.shape[0]):
        lengths, trailing_zeros = _row_runs([int(x) for x in ids[b].tolist()], b)
        seq_lens.append(lengths)
        seq_lens_padded.append(lengths[:-1] + [lengths[-1] + trailing_zeros])
    width = max(len(lengths) for lengths in seq_lens)
    # [tb-device] on the device of the ids; [tb-no-aliasing] two separate tensors.
    batch["seq_lens"] = torch.tensor(
        [row + [THD_LENGTH_PAD] * (width - len(row)) for row in seq_lens], dtype=torch.int64, device=ids.device
    )
    batch["seq_lens_padded"] = torch.tensor(
        [row + [THD_LENGTH_PAD] * (width - len(row)) for row in seq_lens_padded],
        dtype=torch.int64,
        device=ids.device,
    )
    batch["qkv_format"] = "thd"
    return batch
