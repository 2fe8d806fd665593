"""The model-facing output step of a converted batch.

Mirrors upstream ``nemo_automodel/components/datasets/zephon/output.py`` plus the
aliasing the loader applies before yielding (SPEC.md decision D-A3: ``convert_text_batch``
returns the final mapping). Only the ``"batched"`` format is in this slice; ``"thd"`` is
specified in a later revision and declared unsupported by the reference until then.
"""

from __future__ import annotations

import torch

from reference.attention import TrainingBatch, contract_requests_metadata
from reference.packing import BATCH_OUTPUT_FORMATS, PackedSequenceContract, build_packed_sequence_metadata

__all__ = ["apply_batched_output", "block_causal_mask", "check_output_format"]


def check_output_format(output_format: object) -> None:
    """Reject an unknown output format [types-output-format].

    Raises:
        ValueError: ``output_format`` is not ``"batched"`` or ``"thd"``.
    """
    if output_format not in BATCH_OUTPUT_FORMATS:
        raise ValueError(
            f"output_format must be one of {list(BATCH_OUTPUT_FORMATS)}, got {output_format!r}"
        )


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
    """Add the batched route's model inputs [batched-packed-seq-ids, batched-block-causal, batched-document-ids-mask, batched-metadata].

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
