"""Building a backend's call arguments from a case's decoded inputs: packing contracts,
real ``zephon.SampleBatch``es, ``Datum``s. Input mutation is detected with
``batchspec.conformance.helpers.storage.input_state``."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import torch

from batchspec.conformance.helpers.sample_batches import Contract, Row, sample_batch

__all__ = ["build_contract", "build_datum", "build_sample_batch"]

CONTRACT_FIELDS = {"packed_mask_type", "return_packed_sequence_metadata", "return_document_ids", "max_sequence_length"}


def build_contract(spec: Mapping[str, Any] | None) -> Any:
    """A packing contract from a case's ``contract`` option: a ``Contract`` when it names only
    contract fields, else (or with ``minimal``) a plain object with exactly the given attributes."""
    spec = dict(spec or {})
    if spec.pop("minimal", False):  # a plain object with only the given attributes
        return SimpleNamespace(**spec)
    if set(spec) <= CONTRACT_FIELDS:
        return Contract(**spec)
    return SimpleNamespace(**spec)


def build_sample_batch(rows_in: list[Mapping[str, Any]]):
    """A real ``SampleBatch`` from ``text_batch_inputs()`` (``batchspec.conformance.golden.api``), record
    options applied."""
    built = [
        Row(
            tuple(r["tokens"].tolist()),
            None if r["positions"] is None else tuple(r["positions"].tolist()),
            r["padding_length"],
        )
        for r in rows_in
    ]
    batch = sample_batch(built)
    for record, r in zip(batch.records, rows_in):
        payload = record.payload
        if r.get("payload_dtype") == "int32":
            payload["input_ids"] = torch.tensor(payload["input_ids"], dtype=torch.int32)
            if "positions" in payload:
                payload["positions"] = torch.as_tensor(payload["positions"]).to(torch.int32)
        if r.get("drop_positions"):
            del payload["positions"]
        if "tags" in r:
            record.meta.tags["_packing_metadata"] = dict(r["tags"])
        for name, value in (r.get("extra") or {}).items():
            if name in r.get("numpy", ()):  # the stored tensor, given as a numpy array of its dtype
                payload[name] = value.numpy().copy()
                continue
            payload[name] = value.clone() if isinstance(value, torch.Tensor) else value
        if r.get("field", "input_ids") != "input_ids":
            payload[r["field"]] = payload.pop("input_ids")
    return batch


def build_datum(impl: Any, spec: Mapping[str, Any]):
    """``impl.Datum`` from ``{"input_ids": ..., "loss_fn_inputs": {...}}`` (the latter optional)."""
    if "loss_fn_inputs" in spec:
        return impl.Datum(spec["input_ids"], dict(spec["loss_fn_inputs"]))
    return impl.Datum(spec["input_ids"])
