"""The per-function adapters: one declarative record per contract function a golden case may
name (``Case.function``), saying how to build its inputs and call the backend (``run``), which
backend capabilities it needs (conformance/backends.py), and whether its output key order is
part of the contract. ``ADAPTERS`` is the only function -> capability table.

``run(impl, inputs, options)`` receives a private deep copy of the decoded inputs and returns
``(output, mutations)``: the normalized output and the input mutations the call caused
(messages, empty when none). With ``frozen_tensors`` the registry also reports any input
tensor the call modified in place (a function may replace mapping entries, never modify a
tensor in place).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch

from batchspec.conformance.golden.errors import GoldenError
from batchspec.conformance.golden.inputs import (
    build_contract,
    build_datum,
    build_sample_batch,
    payload_changes,
    payload_state,
    tensors_in,
)
from batchspec.conformance.golden.loader_script import run_loader
from batchspec.conformance.helpers.inputs import Contract
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.state_script import run_state_script

__all__ = ["ADAPTERS", "Adapter", "OptionCapability", "adapter", "call", "capabilities_of"]

Run = Callable[[Any, dict, dict], tuple[Any, list[str]]]


@dataclass(frozen=True)
class OptionCapability:
    """A capability a call needs only with certain options."""

    capability: str
    needed: Callable[[Mapping[str, Any]], bool]


THD = OptionCapability("thd", lambda o: o.get("output_format") == "thd")
XDOC = OptionCapability("xdoc", lambda o: bool(o.get("xdoc")))
UNPACKED = OptionCapability("unpacked", lambda o: o.get("pad_to_length") is not None)


@dataclass(frozen=True)
class Adapter:
    """How golden cases call one contract function."""

    function: str
    run: Run
    capabilities: tuple[str, ...]  # always needed
    option_capabilities: tuple[OptionCapability, ...] = ()  # needed with some options, in this order
    ordered_keys: bool = False  # the output's key order is part of the contract
    frozen_tensors: bool = False  # report input tensors the call modified in place
    no_mutation: tuple[str, ...] = ()  # the clauses a modified input breaks (else the case's no-mutation clauses)

    def capabilities_for(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        return self.capabilities + tuple(c.capability for c in self.option_capabilities if c.needed(options))


# ---------------------------------------------------------------------- run functions ----


def _convert_text_batch(impl, inputs, o):
    batch = build_sample_batch(inputs["rows"])
    before = payload_state(batch)
    out = impl.convert_text_batch(
        batch,
        build_contract(o.get("contract")),
        o.get("ignore_index", IGNORE_INDEX),
        o.get("mask_segment_starts", False),
        o.get("xdoc", False),
        o.get("output_format", "batched"),
        o.get("pad_to_length"),
        o.get("pad_token_id"),
    )
    return out, [f"{change} [ctb-no-mutation]" for change in payload_changes(before, payload_state(batch))]


def _state(impl, inputs, o):
    # single-process checkpoint state over real pipelines: conformance/helpers/state_script.py
    return run_state_script(impl, inputs, o), []


def _packed_metadata(impl, inputs, o):
    return impl.build_packed_sequence_metadata(inputs["mask"]), []


def _unpad_data(impl, inputs, o):
    indices, cu_seqlens, max_seqlen = impl.get_unpad_data(inputs["mask"])
    return {"indices": indices, "cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen}, []


def _adapt_model_inputs(impl, inputs, o):
    args = [inputs["batch"]] + ([inputs["attention_eligibility"]] if "attention_eligibility" in inputs else [])
    return impl.adapt_model_inputs(*args), []


def _enable_xdoc_attention(impl, inputs, o):
    return impl.enable_xdoc_attention(inputs["batch"], build_contract(o.get("contract"))), []


def _convert_batch_output(impl, inputs, o):
    return impl.convert_batch_output(inputs["batch"], o["output_format"]), []


def _require_supported_packing_contract(impl, inputs, o):
    # a plain object with exactly the given attributes, or (option "dataclass") the suite's frozen
    # dataclass Contract, its unnamed fields at their defaults
    contract = Contract(**o["contract"]) if o.get("dataclass") else SimpleNamespace(**o["contract"])
    before = dict(vars(contract))
    result = impl.require_supported_packing_contract(contract)
    return {"returns": result}, ([] if vars(contract) == before else ["the contract was modified"])


def _default_contract(impl, inputs, o):
    contract = impl.DEFAULT_PACKED_SEQUENCE_CONTRACT
    out = {
        name: getattr(contract, name, "<missing>")
        for name in (
            "packed_mask_type",
            "return_packed_sequence_metadata",
            "return_document_ids",
            "max_sequence_length",
        )
    }
    try:
        contract.packed_mask_type = "document_ids"
    except Exception:  # noqa: BLE001 - any refusal counts as immutable
        out["immutable"] = True
    else:
        out["immutable"] = False
    return out, []


def _datum(impl, inputs, o):
    d = build_datum(impl, inputs)
    return {"input_ids": d.input_ids, "loss_fn_inputs": dict(d.loss_fn_inputs), "seq_len": d.seq_len}, []


def _to_features(impl, inputs, o):
    d = build_datum(impl, inputs)
    state = {k: v.clone() for k, v in tensors_in(d).items()}
    out = d.to_features(**({"ignore_index": o["ignore_index"]} if "ignore_index" in o else {}))
    after = tensors_in(d)
    return out, [f"datum {k} changed" for k, v in state.items() if not torch.equal(after[k], v)]


def _collate_datums(impl, inputs, o):
    datums = [build_datum(impl, spec) for spec in inputs["datums"]]
    state = {k: v.clone() for k, v in tensors_in(datums).items()}
    keys = [sorted(d.loss_fn_inputs) for d in datums]
    kwargs = {k: o[k] for k in ("packed", "pad_seq_len_divisible", "ignore_index") if k in o}
    out = impl.collate_datums(datums, *o.get("positional", ()), **kwargs)
    after = tensors_in(datums)
    bad = [
        f"datum {k} changed [collate-no-mutation]"
        for k, v in state.items()
        if k not in after or not torch.equal(after[k], v)
    ]
    if [sorted(d.loss_fn_inputs) for d in datums] != keys:
        bad.append("a datum's loss_fn_inputs keys changed [collate-no-mutation]")
    return out, bad


def _default_collater(impl, inputs, o):
    if "pad_seq_len_divisible" not in o:
        return impl.default_collater(inputs["batch"]), []
    if o.get("keyword"):  # pad_seq_len_divisible passed by keyword
        return impl.default_collater(inputs["batch"], pad_seq_len_divisible=o["pad_seq_len_divisible"]), []
    return impl.default_collater(inputs["batch"], o["pad_seq_len_divisible"]), []


def _packed_sequence_thd_collater(impl, inputs, o):
    return impl.packed_sequence_thd_collater(inputs["batch"]), []


def _pack_features_for_thd(impl, inputs, o):
    kwargs = {"ignore_index": o["ignore_index"]} if "ignore_index" in o else {}
    return impl.pack_features_for_thd(inputs["features"], **kwargs), []


# --------------------------------------------------------------------------- registry ----

ADAPTERS: dict[str, Adapter] = {
    a.function: a
    for a in (
        Adapter(
            "convert_text_batch",
            _convert_text_batch,
            ("convert_text_batch",),
            (THD, XDOC, UNPACKED),
            no_mutation=("ctb-no-mutation",),
        ),
        Adapter("ZephonDataLoader", run_loader, ("zephon_loader", "convert_text_batch"), (THD,)),
        Adapter("ZephonDataLoader.state", _state, ("zephon_loader", "zephon_state")),
        Adapter("build_packed_sequence_metadata", _packed_metadata, ("packed_metadata",), frozen_tensors=True),
        Adapter("get_unpad_data", _unpad_data, ("unpad_data",), frozen_tensors=True),
        Adapter(
            "adapt_model_inputs",
            _adapt_model_inputs,
            ("adapt_model_inputs",),
            frozen_tensors=True,
            no_mutation=("adapt-no-mutation",),
        ),
        Adapter(
            "enable_xdoc_attention",
            _enable_xdoc_attention,
            ("xdoc",),
            frozen_tensors=True,
            no_mutation=("xdoc-untouched",),
        ),
        Adapter("convert_batch_output", _convert_batch_output, ("convert_batch_output",), frozen_tensors=True),
        Adapter(
            "require_supported_packing_contract",
            _require_supported_packing_contract,
            ("contract_types",),
            no_mutation=("contract-validation",),
        ),
        Adapter("DEFAULT_PACKED_SEQUENCE_CONTRACT", _default_contract, ("contract_types",)),
        Adapter("Datum", _datum, ("datum",)),
        Adapter("Datum.to_features", _to_features, ("datum",), ordered_keys=True, no_mutation=("datum-to-features",)),
        Adapter("collate_datums", _collate_datums, ("datum",), ordered_keys=True, no_mutation=("collate-no-mutation",)),
        Adapter("default_collater", _default_collater, ("collaters",), ordered_keys=True),
        Adapter("packed_sequence_thd_collater", _packed_sequence_thd_collater, ("collaters",), ordered_keys=True),
        Adapter("pack_features_for_thd", _pack_features_for_thd, ("collaters",), ordered_keys=True),
    )
}


def adapter(function: str) -> Adapter:
    try:
        return ADAPTERS[function]
    except KeyError:
        raise GoldenError(f"unknown golden function {function!r}; adapters exist for {sorted(ADAPTERS)}") from None


def capabilities_of(function: str, options: Mapping[str, Any]) -> tuple[str, ...]:
    """The backend capabilities (conformance/backends.py) a case needs."""
    return adapter(function).capabilities_for(options)


def call(impl: Any, function: str, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """Call ``function`` of ``impl`` (a backend or the ``reference`` module) on decoded
    ``inputs``; return the normalized output and a list of input mutations it caused."""
    spec = adapter(function)
    inputs = copy.deepcopy(dict(inputs))
    if not spec.frozen_tensors:
        return spec.run(impl, inputs, dict(options))
    # (the tensor object itself, a copy): a function may replace mapping entries, never modify a tensor in place
    snapshot = {k: (v, v.clone()) for k, v in tensors_in(inputs).items()}
    output, mutated = spec.run(impl, inputs, dict(options))
    mutated = mutated + [
        f"input tensor {k} was modified in place"
        for k, (v, copy_) in snapshot.items()
        if not (v.dtype == copy_.dtype and v.shape == copy_.shape and torch.equal(v, copy_))
    ]
    return output, mutated
