"""The routes of the model-level equivalence check (``ROUTES``): how a ``TrainingBatch`` reaches the
model (``wiring.py``), the capabilities and clauses each needs and checks, the keys the model
reads, and the input batches of each (``route_batches``, ``data.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from batchspec.conformance.helpers.sample_batches import Contract
from batchspec.conformance.model import wiring
from batchspec.conformance.model.data import ModelBatch, packed_batches, unpacked_batches

__all__ = ["ROUTES", "Route", "route_batches"]


@dataclass(frozen=True)
class Route:
    """How a ``TrainingBatch`` reaches the model.

    ``feed``: ``"mask"`` (``attention_mask`` bool ``[batch, 1, sequence, sequence]``, as given to
    ``sdpa``, additive to ``eager``), ``"metadata"`` (the packed-metadata bundle, through
    ``wiring.METADATA_ATTENTION``) or ``"thd"`` (``seq_lens`` / ``seq_lens_padded``, through
    ``wiring.THD_ATTENTION``). ``model``: the positions the route's model reads
    (``models.position_kind``); on ``"mrope"`` positions ``[3, batch, sequence]`` are numbered as
    a processor does (``mrope_positions``), then, under ``xdoc``, go through
    ``enable_xdoc_attention``, whose ids give the block-causal mask. ``reads``: the keys the
    model consumes.
    """

    name: str
    summary: str
    requires: tuple[str, ...]
    clauses: tuple[str, ...]
    feed: str
    reads: tuple[str, ...]
    contract: Contract = Contract()
    output_format: str = "batched"
    xdoc: bool = False
    mask_segment_starts: bool = False
    ignore_index: int = -100
    unpacked: bool = False
    model: str = "rope"  # the positions the route's model reads: "rope", "mrope", "absolute" (models.position_kind)
    # a mask route also under eager (its additive mask); the wiring is the same on every mask
    # route, so the suite runs it on two (check-model runs the implementations a user names)
    eager: bool = False

    @property
    def mrope(self) -> bool:
        """Positions ``[3, batch, sequence]`` numbered as a processor does, for an mRoPE model."""
        return self.model == "mrope"

    @property
    def implementations(self) -> tuple[str, ...]:
        """The attention implementations the route runs under on the CPU."""
        return {
            "mask": ("sdpa", "eager") if self.eager else ("sdpa",),
            "metadata": (wiring.METADATA_ATTENTION,),
            "thd": (wiring.THD_ATTENTION,),
        }[self.feed]


_MASK_READS = ("input_ids", "position_ids", "attention_mask", "labels")
_METADATA_READS = ("input_ids", "position_ids", "packed_token_indices", "cu_seqlens", "max_seqlen", "labels")
_THD_READS = ("input_ids", "position_ids", "seq_lens", "seq_lens_padded", "labels")

ROUTES: tuple[Route, ...] = (
    Route(
        "block_causal",
        "batched, block-causal attention_mask",
        ("convert_text_batch",),
        ("ctb-shift", "ctb-positions", "ctb-padding-labels", "ctb-cross-document-targets", "batched-block-causal"),
        "mask",
        _MASK_READS,
        eager=True,
    ),
    Route(
        "metadata",
        "batched, document_ids mask + packed-metadata bundle, mask_segment_starts, ignore_index -1",
        ("convert_text_batch",),
        (
            "ctb-shift",
            "ctb-positions",
            "ctb-padding-labels",
            "ctb-segment-starts",
            "ctb-ignore-index",
            "batched-metadata",
        ),
        "metadata",
        _METADATA_READS,
        Contract("document_ids", True),
        mask_segment_starts=True,
        ignore_index=-1,
    ),
    Route(
        "thd",
        'output_format="thd", seq_lens / seq_lens_padded',
        ("convert_text_batch", "thd"),
        ("ctb-shift", "ctb-positions", "ctb-padding-labels", "thd-lengths"),
        "thd",
        _THD_READS,
        output_format="thd",
    ),
    Route(
        "xdoc",
        "xdoc, block-causal attention_mask, mask_segment_starts (original boundaries)",
        ("convert_text_batch", "xdoc"),
        (
            "ctb-xdoc",
            "ctb-selected-ids",
            "xdoc-positions",
            "xdoc-attention-ids",
            "batched-block-causal",
            "ctb-segment-starts",
        ),
        "mask",
        _MASK_READS,
        xdoc=True,
        mask_segment_starts=True,
    ),
    Route(
        "xdoc_metadata",
        "xdoc, packed-metadata bundle (row-long spans)",
        ("convert_text_batch", "xdoc"),
        ("ctb-xdoc", "ctb-selected-ids", "xdoc-positions", "batched-metadata"),
        "metadata",
        _METADATA_READS,
        Contract("block_causal", True),
        xdoc=True,
    ),
    Route(
        "mrope",
        "3-axis positions (Qwen2-VL text model), block-causal attention_mask",
        ("convert_text_batch",),
        ("ctb-shift", "ctb-padding-labels", "batched-block-causal"),
        "mask",
        ("input_ids", "attention_mask", "labels"),
        model="mrope",
    ),
    Route(
        "absolute_positions",
        "learned absolute position embeddings (GPT-2), block-causal attention_mask",
        ("convert_text_batch",),
        ("ctb-shift", "ctb-positions", "ctb-padding-labels", "batched-block-causal"),
        "mask",
        _MASK_READS,
        model="absolute",
        eager=True,
    ),
    Route(
        "mrope_xdoc",
        "3-axis positions through enable_xdoc_attention, block-causal mask of its ids",
        ("convert_text_batch", "xdoc"),
        ("xdoc-positions", "xdoc-attention-ids", "ctb-shift"),
        "mask",
        ("input_ids", "position_ids", "attention_document_ids", "labels"),
        xdoc=True,
        model="mrope",
    ),
    Route(
        "unpacked",
        "pad_to_length, block-causal attention_mask",
        ("convert_text_batch", "unpacked"),
        ("unpacked-padding", "unpacked-same-route", "batched-block-causal", "ctb-padding-labels", "ctb-shift"),
        "mask",
        _MASK_READS,
        unpacked=True,
    ),
    Route(
        "unpacked_thd",
        'pad_to_length, output_format="thd"',
        ("convert_text_batch", "thd", "unpacked"),
        ("unpacked-padding", "unpacked-same-route", "thd-lengths", "ctb-padding-labels"),
        "thd",
        _THD_READS,
        output_format="thd",
        unpacked=True,
    ),
)


def route_batches(route: Route) -> tuple[ModelBatch, ...]:
    """The input batches of ``route``: unpacked records for the unpacked routes, packed rows
    otherwise (``data.py``)."""
    return unpacked_batches() if route.unpacked else packed_batches()
