"""How a golden case calls each contract function: one ``run(impl, inputs, options)`` per
golden target (``Case.function``), named by the records of ``conformance/run/functions.py``.

``run`` receives a private deep copy of the decoded inputs (``conformance/golden/adapters.py``,
``call``) and returns ``(output, mutations)``: the normalized output and the input mutations
the call caused (messages, empty when none).
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from batchspec.conformance.golden.call_arguments import build_contract, build_datum, build_sample_batch
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.sample_batches import Contract
from batchspec.conformance.helpers.state_script import run_state_script
from batchspec.conformance.helpers.storage import input_state, state_changes, tensors_in

__all__ = [
    "run_adapt_model_inputs",
    "run_collate_datums",
    "run_convert_batch_output",
    "run_convert_text_batch",
    "run_datum",
    "run_default_collater",
    "run_default_contract",
    "run_enable_xdoc_attention",
    "run_pack_features_for_thd",
    "run_packed_metadata",
    "run_packed_sequence_thd_collater",
    "run_require_supported_packing_contract",
    "run_state",
    "run_to_features",
    "run_unpad_data",
]


def run_convert_text_batch(impl, inputs, o):
    batch = build_sample_batch(inputs["rows"])
    before = input_state(batch, "sample_batch")
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
    changes = state_changes(before, input_state(batch, "sample_batch"))
    return out, [f"{change} [ctb-no-mutation]" for change in changes]


def run_state(impl, inputs, o):
    # single-process checkpoint state over real pipelines: conformance/helpers/state_script.py
    return run_state_script(impl, inputs, o), []


def run_packed_metadata(impl, inputs, o):
    return impl.build_packed_sequence_metadata(inputs["mask"]), []


def run_unpad_data(impl, inputs, o):
    indices, cu_seqlens, max_seqlen = impl.get_unpad_data(inputs["mask"])
    return {"indices": indices, "cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen}, []


def run_adapt_model_inputs(impl, inputs, o):
    args = [inputs["batch"]] + ([inputs["attention_eligibility"]] if "attention_eligibility" in inputs else [])
    return impl.adapt_model_inputs(*args), []


def run_enable_xdoc_attention(impl, inputs, o):
    return impl.enable_xdoc_attention(inputs["batch"], build_contract(o.get("contract"))), []


def run_convert_batch_output(impl, inputs, o):
    return impl.convert_batch_output(inputs["batch"], o["output_format"]), []


def run_require_supported_packing_contract(impl, inputs, o):
    # a plain object with exactly the given attributes, or (option "dataclass") the suite's frozen
    # dataclass Contract, its unnamed fields at their defaults
    contract = Contract(**o["contract"]) if o.get("dataclass") else SimpleNamespace(**o["contract"])
    before = dict(vars(contract))
    result = impl.require_supported_packing_contract(contract)
    return {"returns": result}, ([] if vars(contract) == before else ["the contract was modified"])


def run_default_contract(impl, inputs, o):
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
    except Exception:  # any refusal counts as immutable
        out["immutable"] = True
    else:
        out["immutable"] = False
    return out, []


def run_datum(impl, inputs, o):
    d = build_datum(impl, inputs)
    return {"input_ids": d.input_ids, "loss_fn_inputs": dict(d.loss_fn_inputs), "seq_len": d.seq_len}, []


def run_to_features(impl, inputs, o):
    d = build_datum(impl, inputs)
    state = {k: v.clone() for k, v in tensors_in(d).items()}
    out = d.to_features(**({"ignore_index": o["ignore_index"]} if "ignore_index" in o else {}))
    after = tensors_in(d)
    return out, [f"datum {k} changed" for k, v in state.items() if not torch.equal(after[k], v)]


def run_collate_datums(impl, inputs, o):
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


def run_default_collater(impl, inputs, o):
    if "pad_seq_len_divisible" not in o:
        return impl.default_collater(inputs["batch"]), []
    if o.get("keyword"):  # pad_seq_len_divisible passed by keyword
        return impl.default_collater(inputs["batch"], pad_seq_len_divisible=o["pad_seq_len_divisible"]), []
    return impl.default_collater(inputs["batch"], o["pad_seq_len_divisible"]), []


def run_packed_sequence_thd_collater(impl, inputs, o):
    return impl.packed_sequence_thd_collater(inputs["batch"]), []


def run_pack_features_for_thd(impl, inputs, o):
    kwargs = {"ignore_index": o["ignore_index"]} if "ignore_index" in o else {}
    return impl.pack_features_for_thd(inputs["features"], **kwargs), []
