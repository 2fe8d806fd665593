"""Contract types: the packing contract, its validation, and the types of a converted batch.

Mirrors upstream ``nemo_automodel/components/datasets/packing.py`` (nemo-automodel 0.7.0: the
output-format and mask-type literals, the structural ``PackedSequenceContract``,
``DEFAULT_PACKED_SEQUENCE_CONTRACT``) and the contract checks of
``nemo_automodel/components/datasets/zephon/attention.py`` (``TrainingBatch``,
``contract_requests_metadata``, ``require_supported_packing_contract``). Also the one home of
the SPEC's pad constants and the int64 range every backend checks integer inputs against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, NotRequired, Protocol, TypedDict

import torch

__all__ = [
    "BATCH_OUTPUT_FORMATS",
    "CROSS_ENTROPY_IGNORE_IDX",
    "DEFAULT_PACKED_SEQUENCE_CONTRACT",
    "INT64_MAX",
    "INT64_MIN",
    "PACKED_MASK_TYPES",
    "THD_LENGTH_PAD",
    "BatchOutputFormat",
    "PackedMaskType",
    "PackedSequenceContract",
    "PackedSequenceMetadata",
    "TrainingBatch",
    "contract_requests_metadata",
    "require_supported_packing_contract",
]

# The label value a loss skips: upstream's CROSS_ENTROPY_IGNORE_IDX, the default ignore_index
# of the collaters and the pad of collated labels [collate-padded, dcoll-pad-values].
CROSS_ENTROPY_IGNORE_IDX: Final[int] = -100

# Unused slots of THD seq_lens / seq_lens_padded [thd-lengths, thdcoll-prepacked].
THD_LENGTH_PAD: Final[int] = -1000

# The range of int64, the dtype of every integer field of a TrainingBatch [tb-dtypes]: a token
# or position outside it is an input error ([ctb-input-errors] item 6); a backend's fast paths
# take only integers inside it.
INT64_MIN: Final[int] = -(2**63)
INT64_MAX: Final[int] = 2**63 - 1

# [types-output-format] "batched" keeps [batch, sequence] tensors and honours the contract's
# mask and metadata requests; "thd" adds the native length-based route.
BatchOutputFormat = Literal["batched", "thd"]
BATCH_OUTPUT_FORMATS: Final[tuple[str, ...]] = ("batched", "thd")

# [types-mask-type] "block_causal": dense bool [batch, 1, sequence, sequence];
# "document_ids": compact int64 [batch, sequence] of row-local ids.
PackedMaskType = Literal["block_causal", "document_ids"]
PACKED_MASK_TYPES: Final[tuple[str, ...]] = ("block_causal", "document_ids")


class PackedSequenceContract(Protocol):
    """What the model asks of a packed batch [types-contract].

    Structural: any object with these read-only attributes is a contract.
    ``max_sequence_length`` is optional (``None`` when absent); a legacy contract may spell
    the metadata request ``requires_packed_sequence_metadata`` (see
    ``require_supported_packing_contract``).
    """

    @property
    def packed_mask_type(self) -> PackedMaskType:
        """Representation of the packed attention mask the model consumes."""
        ...

    @property
    def return_packed_sequence_metadata(self) -> bool:
        """Whether the model consumes ``packed_token_indices``/``cu_seqlens``/``max_seqlen``."""
        ...

    @property
    def return_document_ids(self) -> bool:
        """Whether the model asks for the original subdocument membership."""
        ...


@dataclass(frozen=True)
class _DefaultPackedSequenceContract:
    """Block-causal packing for callers without model requirements [types-default-contract]."""

    packed_mask_type: PackedMaskType = "block_causal"
    return_packed_sequence_metadata: bool = False
    return_document_ids: bool = False
    max_sequence_length: int | None = None


DEFAULT_PACKED_SEQUENCE_CONTRACT: Final[PackedSequenceContract] = _DefaultPackedSequenceContract()


class PackedSequenceMetadata(TypedDict):
    """Batch-major gathered-token metadata; stays valid when dim 0 is split [meta-indices]."""

    packed_token_indices: torch.Tensor
    cu_seqlens: torch.Tensor
    max_seqlen: int


class TrainingBatch(TypedDict):
    """Collated tensors handed to the model [tb-shapes, tb-dtypes, tb-keys].

    Token fields are ``[batch, sequence]``; ``position_ids`` is ``[batch, sequence]``, or
    ``[axes, batch, sequence]`` for mRoPE. SPEC.md's "TrainingBatch" section gives every
    field's dtype, padding value and presence.
    """

    input_ids: torch.Tensor
    labels: torch.Tensor
    padding_mask: torch.Tensor
    position_ids: torch.Tensor
    document_ids: NotRequired[torch.Tensor]
    attention_document_ids: NotRequired[torch.Tensor]
    attention_mask: NotRequired[torch.Tensor]
    _packed_seq_ids: NotRequired[torch.Tensor]
    packed_token_indices: NotRequired[torch.Tensor]
    cu_seqlens: NotRequired[torch.Tensor]
    max_seqlen: NotRequired[int]
    seq_lens: NotRequired[torch.Tensor]
    seq_lens_padded: NotRequired[torch.Tensor]
    qkv_format: NotRequired[str]


def contract_requests_metadata(packing_contract: PackedSequenceContract) -> bool:
    """Whether the contract asks for the gathered-token bundle [contract-metadata-flag].

    Reads ``return_packed_sequence_metadata``, or the legacy spelling
    ``requires_packed_sequence_metadata`` when only that one exists.

    Raises:
        TypeError: neither attribute exists, or its value is not a ``bool``.
    """
    for name in ("return_packed_sequence_metadata", "requires_packed_sequence_metadata"):
        if hasattr(packing_contract, name):
            value = getattr(packing_contract, name)
            if not isinstance(value, bool):
                raise TypeError(f"packing_contract.{name} must be a bool, got {type(value).__name__} {value!r}")
            return value
    raise TypeError(
        "packing_contract must have a bool attribute return_packed_sequence_metadata "
        f"(or the legacy requires_packed_sequence_metadata); {type(packing_contract).__name__} has neither"
    )


def require_supported_packing_contract(contract: PackedSequenceContract) -> None:
    """Validate a packing contract once, when a loader is built [contract-validation,
    contract-metadata-flag, contract-once].

    Reads the contract; never mutates it.

    Args:
        contract: an object with ``packed_mask_type`` (one of ``"block_causal"``,
            ``"document_ids"``) and a bool metadata request (see
            ``contract_requests_metadata``); optionally a bool ``return_document_ids`` and an
            ``int`` (>= 1) or ``None`` ``max_sequence_length``.

    Raises:
        TypeError: an attribute is missing or has the wrong type.
        ValueError: ``packed_mask_type`` is not a known mask type, or
            ``max_sequence_length`` < 1.
    """
    if not hasattr(contract, "packed_mask_type"):
        raise TypeError(f"packing_contract must have a packed_mask_type attribute; {type(contract).__name__} has none")
    mask_type = contract.packed_mask_type
    if mask_type not in PACKED_MASK_TYPES:
        raise ValueError(
            f"packing_contract.packed_mask_type must be one of {list(PACKED_MASK_TYPES)}, got {mask_type!r}"
        )
    contract_requests_metadata(contract)
    return_document_ids = getattr(contract, "return_document_ids", False)
    if not isinstance(return_document_ids, bool):
        raise TypeError(
            "packing_contract.return_document_ids must be a bool, "
            f"got {type(return_document_ids).__name__} {return_document_ids!r}"
        )
    max_sequence_length = getattr(contract, "max_sequence_length", None)
    if max_sequence_length is not None:
        if isinstance(max_sequence_length, bool) or not isinstance(max_sequence_length, int):
            raise TypeError(
                "packing_contract.max_sequence_length must be an int or None, "
                f"got {type(max_sequence_length).__name__} {max_sequence_length!r}"
            )
        if max_sequence_length < 1:
            raise ValueError(f"packing_contract.max_sequence_length must be >= 1, got {max_sequence_length}")
