"""The suite's literal helpers and the SPEC's constants, used by the conformance modules and
(through the public case API, ``batchspec.conformance.golden.api``) by ``golden/cases/*.py``.

Hand-written expected values live in ``golden/cases/`` only; a conformance check that needs a
golden case's input on a live object reads it from the stored case (``batchspec.conformance.golden.case_values``).
"""

from __future__ import annotations

import torch

from batchspec.conformance.helpers.sample_batches import Contract, sample_batch

__all__ = [
    "ALWAYS_KEYS",
    "BATCHED_KEYS",
    "DOCUMENT_IDS_METADATA_CONTRACT",
    "METADATA_CONTRACT",
    "METADATA_KEYS",
    "THD_KEYS",
    "IGNORE_INDEX",
    "PAD_TOKEN_IDS_KEY",
    "THD_PAD",
    "block_mask",
    "bools",
    "convert",
    "f32",
    "int32",
    "long",
]

IGNORE_INDEX = -100
"""SPEC.md's ``CROSS_ENTROPY_IGNORE_IDX``: the default ``ignore_index`` of ``to_features``,
``collate_datums`` and ``pack_features_for_thd``, the pad value of padded labels in the
collaters, and the ``ignore_index`` the worked examples pass to ``convert_text_batch``."""

PAD_TOKEN_IDS_KEY = "___PAD_TOKEN_IDS___"
"""The canonical collaters' per-batch pad override: item 0 may carry ``{key: pad id}`` under
this key ([dcoll-pad-values]); it is never an output key."""

THD_PAD = -1000
"""SPEC.md's fill of the unused slots of ``seq_lens`` / ``seq_lens_padded`` ([thd-lengths],
[thdcoll-prepacked])."""

# The TrainingBatch keys of each route (SPEC.md's field table, [tb-keys]), written once here;
# the golden case API re-exports them.
ALWAYS_KEYS = ("input_ids", "labels", "position_ids", "padding_mask", "document_ids", "attention_document_ids")
BATCHED_KEYS = (*ALWAYS_KEYS, "_packed_seq_ids", "attention_mask")
METADATA_KEYS = ("packed_token_indices", "cu_seqlens", "max_seqlen")
THD_KEYS = (*ALWAYS_KEYS, "seq_lens", "seq_lens_padded", "qkv_format")

# Contracts (as case options) that request the packed-metadata bundle, per mask type.
METADATA_CONTRACT = {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": True}
DOCUMENT_IDS_METADATA_CONTRACT = {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True}


def long(values) -> torch.Tensor:
    """An int64 tensor literal."""
    return torch.tensor(values, dtype=torch.int64)


def int32(values) -> torch.Tensor:
    """An int32 tensor literal."""
    return torch.tensor(values, dtype=torch.int32)


def f32(values) -> torch.Tensor:
    """A float32 tensor literal."""
    return torch.tensor(values, dtype=torch.float32)


def bools(values) -> torch.Tensor:
    """A bool tensor literal."""
    return torch.tensor(values, dtype=torch.bool)


def block_mask(*rows: str) -> torch.Tensor:
    """bool ``[B, 1, S, S]`` from one string per batch row, written one query row per word:
    ``block_mask("1.. 11. ...")`` is a row whose third query attends to nothing."""
    return torch.tensor([[[[c == "1" for c in q] for q in row.split()]] for row in rows], dtype=torch.bool)


DEFAULT_CONTRACT = Contract()  # frozen: one shared default is safe


def convert(
    backend,
    rows,
    contract=DEFAULT_CONTRACT,
    *,
    ignore_index=IGNORE_INDEX,
    mask_segment_starts=False,
    xdoc=False,
    output_format="batched",
    pad_to_length=None,
    pad_token_id=None,
):
    """``backend.convert_text_batch`` on ``rows``, every argument passed positionally."""
    return backend.convert_text_batch(
        sample_batch(rows),
        contract,
        ignore_index,
        mask_segment_starts,
        xdoc,
        output_format,
        pad_to_length,
        pad_token_id,
    )
