"""Building a backend's call arguments from a case's decoded inputs: packing contracts,
real ``zephon.SampleBatch``es, ``Datum``s; and the snapshots that detect input mutation."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import torch

from batchspec.conformance.helpers.sample_batches import Contract, Row, sample_batch

__all__ = ["build_contract", "build_datum", "build_sample_batch", "payload_changes", "payload_state"]

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


def payload_state(batch) -> list:
    """A comparable copy of every record's payload (values, and the type and dtype of each
    field) and meta (``padding_length`` and tags)."""
    return [
        (
            {
                k: (
                    type(v).__name__,
                    str(getattr(v, "dtype", "")),
                    v.tolist() if hasattr(v, "tolist") else copy.deepcopy(v),
                )
                for k, v in r.payload.items()
            },
            {"padding_length": r.meta.padding_length, "tags": copy.deepcopy(r.meta.tags)},
        )
        for r in batch.records
    ]


def payload_changes(before: list, after: list) -> list[str]:
    """What differs between two ``payload_state``s: one line per changed field, naming the
    record, the field and both values."""
    changes = [f"{len(before)} records before, {len(after)} after"] if len(before) != len(after) else []
    for index, ((payload_a, meta_a), (payload_b, meta_b)) in enumerate(zip(before, after)):
        for where, a, b in (("payload", payload_a, payload_b), ("meta", meta_a, meta_b)):
            for key in sorted(set(a) | set(b), key=str):
                if a.get(key) != b.get(key):
                    changes.append(
                        f"record {index} {where} {key!r}: {a.get(key, 'absent')!r} -> {b.get(key, 'absent')!r}"
                    )
    return changes


def build_datum(impl: Any, spec: Mapping[str, Any]):
    """``impl.Datum`` from ``{"input_ids": ..., "loss_fn_inputs": {...}}`` (the latter optional)."""
    if "loss_fn_inputs" in spec:
        return impl.Datum(spec["input_ids"], dict(spec["loss_fn_inputs"]))
    return impl.Datum(spec["input_ids"])
