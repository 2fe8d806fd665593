"""Where the returned tensors live and what they share: [tb-device] and [tb-no-aliasing]
(SPEC.md, "``TrainingBatch`` fields").

[tb-device]: a function that receives tensors returns tensors on their device; the checks take
the expected device from the inputs they build, so they hold unchanged on an accelerator
(every device torch reports available is tried; CPU always). ``convert_text_batch`` (a
``SampleBatch`` of lists and numpy arrays), ``Datum``, ``collate_datums`` and the collaters
given no tensor return CPU tensors.

[tb-no-aliasing]: no two returned tensors under different keys share storage, unless both were
in the received mapping and left untouched, and nothing returned shares storage with a
``SampleBatch``; the metadata functions' tensors share nothing with each other or the mask.
"Share storage" is checked on memory (``batchspec.conformance.helpers.storage``): two views of one storage
share it even when their elements do not overlap.

Inputs are written by hand or, where a golden case holds them, read from that stored case
(``batchspec.conformance.golden.case_values``); the code under test is reached only through the ``backend`` fixture.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
import torch

from batchspec.conformance.golden.case_values import EXAMPLE, stored_expected, stored_inputs, stored_rows
from batchspec.conformance.helpers.asserts import assert_tensor_equal, clause_failure
from batchspec.conformance.helpers.literals import IGNORE_INDEX, long
from batchspec.conformance.helpers.routes import call_convert, convert_configs
from batchspec.conformance.helpers.sample_batches import (
    Contract,
    Row,
    assert_batch_unchanged,
    payload_form,
    sample_batch,
)
from batchspec.conformance.helpers.storage import input_state, shared_storage, tensors_in


def _available_devices() -> list[str]:
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


DEVICES = _available_devices()

EXAMPLE_ROWS = stored_rows()  # worked example A's packed batch
# worked example E's records, and one with padding already
UNPACKED_ROWS = stored_rows("test_example_e_unpacked") + [Row((1, 2, 0), None, 1)]
CONVERT_CONFIGS = convert_configs(EXAMPLE_ROWS, UNPACKED_ROWS)


def _assert_on(device: torch.device | str, value: Any, *, call: str) -> None:
    """Every tensor in ``value`` lives on ``device``."""
    __tracebackhide__ = True
    want = torch.device(device)
    wrong = {path: str(t.device) for path, t in tensors_in(value).items() if t.device != want}
    if wrong:
        raise clause_failure(
            f"tensors {wrong} are not on {want}, but should be (the device of the inputs)",
            clause="tb-device",
            call=call,
        )


def _assert_no_pairs(pairs: list[tuple[str, str]], what: str, *, call: str) -> None:
    __tracebackhide__ = True
    if pairs:
        shown = ", ".join(f"{a} and {b}" for a, b in pairs)
        raise clause_failure(f"{shown} share storage, but {what}", clause="tb-no-aliasing", call=call)


def _returned_tensors(out: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    return {key: value for key, value in out.items() if isinstance(value, torch.Tensor)}


def _assert_new_entries_share_nothing(before: Mapping[str, Any], out: Mapping[str, Any], *, call: str) -> None:
    """Every tensor the call added or replaced shares no storage with any other returned tensor
    (pairs of entries the call received and left in place are exempt)."""
    __tracebackhide__ = True
    returned = _returned_tensors(out)
    new = {key: t for key, t in returned.items() if before.get(key) is not t}
    kept = {key: t for key, t in returned.items() if key not in new}
    _assert_no_pairs(shared_storage(new), "each new entry should be a tensor of its own", call=call)
    _assert_no_pairs(
        shared_storage(new, kept), "a new entry should not share storage with one the mapping had", call=call
    )


# -- [tb-device] -------------------------------------------------------------------------------


@pytest.mark.clause("tb-device")
@pytest.mark.parametrize("options", CONVERT_CONFIGS)
def test_convert_text_batch_returns_cpu_tensors(backend, options):
    """A SampleBatch of lists and numpy arrays gives CPU tensors on every route."""
    out, _, call = call_convert(backend, options)
    _assert_on("cpu", out, call=call)


# (token fields' form, positions' form): positions in another form than the token fields
POSITION_FORMS = [("tensor", "list"), ("tensor", "numpy"), ("list", "tensor"), ("numpy", "tensor")]


def _as_form(values, form: str, device):
    if form == "list":
        return list(values)
    if form == "numpy":
        return np.asarray(values, dtype=np.int64)
    return torch.tensor(values, dtype=torch.int64, device=device)


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("tb-device", "ctb-positions")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("forms", POSITION_FORMS, ids=[f"tokens-{t}-positions-{p}" for t, p in POSITION_FORMS])
def test_positions_follow_the_token_fields(backend, device, forms):
    """[tb-device]: ``positions`` in another form than the token fields (a list or numpy array
    beside tensor token fields on ``device``, a tensor on ``device`` beside list or numpy token
    fields) are taken as they come: ``position_ids`` is where every other output is (``device``
    for tensor token fields, else the CPU), with worked example A's values [ctb-positions]."""
    tokens_form, positions_form = forms
    batch = sample_batch(EXAMPLE_ROWS)
    for record, row in zip(batch.records, EXAMPLE_ROWS):
        record.payload["input_ids"] = _as_form(row.tokens, tokens_form, device)
        record.payload["positions"] = _as_form(row.positions, positions_form, device)
    call = f"convert_text_batch(worked example A, token fields as {tokens_form}, positions as {positions_form} on {device})"
    try:
        out = backend.convert_text_batch(batch, Contract(), IGNORE_INDEX, False, False)
    except Exception as error:  # any refusal of the positions' form is the failure
        raise clause_failure(
            f"raised {type(error).__name__}({error}), but should take positions in any form and move them",
            clause="tb-device",
            call=call,
        ) from error
    _assert_on(device if tokens_form == "tensor" else "cpu", out, call=call)
    assert_tensor_equal(
        "position_ids",
        out["position_ids"].cpu(),
        stored_expected(EXAMPLE)["position_ids"],
        clause="ctb-positions",
        call=call,
    )


def _ids(device):
    """Worked example A's document ids (golden case test_adapt_without_eligibility's input)."""
    return stored_inputs("test_adapt_without_eligibility")["batch"]["document_ids"].to(device)


def _positions(device):
    """Worked example A's position ids (golden case test_adapt_without_eligibility's input)."""
    return stored_inputs("test_adapt_without_eligibility")["batch"]["position_ids"].to(device)


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("tb-device")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("eligibility", [False, True], ids=["no-eligibility", "eligibility"])
def test_adapt_model_inputs_follows_its_inputs(backend, device, eligibility):
    document_ids = _ids(device)
    args = [{"document_ids": document_ids, "position_ids": _positions(device)}]
    if eligibility:
        args.append(torch.ones(document_ids.shape, dtype=torch.bool, device=document_ids.device))
    out = backend.adapt_model_inputs(*args)
    _assert_on(document_ids.device, out, call=f"adapt_model_inputs(tensors on {document_ids.device})")


@pytest.mark.requires("xdoc")
@pytest.mark.clause("tb-device")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axes", [None, 3], ids=["text", "mrope"])
def test_enable_xdoc_attention_follows_its_inputs(backend, device, axes):
    ids = _ids(device)
    positions = _positions(device) if axes is None else _positions(device).expand(axes, -1, -1).clone()
    batch = {"document_ids": ids, "attention_document_ids": ids.clone(), "position_ids": positions}
    out = backend.enable_xdoc_attention(batch, Contract(max_sequence_length=64))
    _assert_on(ids.device, out, call=f"enable_xdoc_attention(tensors on {ids.device}, axes={axes})")


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("tb-device")
@pytest.mark.parametrize("device", DEVICES)
def test_convert_batch_output_follows_its_inputs(backend, device):
    ids = _ids(device)
    out = backend.convert_batch_output({"document_ids": ids, "attention_document_ids": ids.clone()}, "thd")
    _assert_on(ids.device, out, call=f"convert_batch_output(ids on {ids.device}, 'thd')")


MASKS = {
    "indexed": lambda: long([[1, 1, 2, 0], [1, 0, 0, 0]]),
    "binary-int32": lambda: torch.tensor([[1, 1, 1, 0], [0, 0, 0, 0]], dtype=torch.int32),
    "bool": lambda: torch.tensor([[True, False, True, True]]),
}


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("tb-device")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mask_kind", list(MASKS))
def test_build_packed_sequence_metadata_follows_its_mask(backend, device, mask_kind):
    mask = MASKS[mask_kind]().to(device)
    out = backend.build_packed_sequence_metadata(mask)
    _assert_on(mask.device, dict(out), call=f"build_packed_sequence_metadata({mask_kind} mask on {mask.device})")


@pytest.mark.requires("unpad_data")
@pytest.mark.clause("tb-device")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mask_kind", list(MASKS))
def test_get_unpad_data_follows_its_mask(backend, device, mask_kind):
    mask = MASKS[mask_kind]().to(device)
    out = backend.get_unpad_data(mask)
    _assert_on(mask.device, list(out), call=f"get_unpad_data({mask_kind} mask on {mask.device})")


@pytest.mark.requires("datum")
@pytest.mark.clause("tb-device")
def test_datum_and_collate_datums_of_lists_are_on_cpu(backend):
    """Datums built from lists, collated padded and packed: every tensor is on the CPU."""

    def datums():
        return [
            backend.Datum([10, 11, 12], {"target_tokens": [11, 12, 13], "weights": [1, 1, 0], "advantages": [0.5]}),
            backend.Datum([20, 21], {"target_tokens": [21, 22], "weights": [0, 1], "advantages": [-1.5]}),
        ]

    for datum in datums():
        _assert_on("cpu", {"input_ids": datum.input_ids, **datum.loss_fn_inputs}, call="Datum(lists)")
    for packed in (False, True):
        out = backend.collate_datums(datums(), packed=packed)
        _assert_on("cpu", out, call=f"collate_datums(datums of lists, packed={packed})")


@pytest.mark.requires("datum")
@pytest.mark.clause("tb-device")
@pytest.mark.parametrize("device", DEVICES)
def test_datum_keeps_its_tensors_device(backend, device):
    """A Datum keeps the tensors it is given, on their device."""
    input_ids = torch.tensor([1, 2, 3], device=device)
    datum = backend.Datum(input_ids, {"weights": torch.tensor([1.0, 0.0, 1.0], device=device)})
    _assert_on(
        input_ids.device,
        {"input_ids": datum.input_ids, **datum.loss_fn_inputs},
        call=f"Datum(tensors on {input_ids.device})",
    )


@pytest.mark.requires("collaters")
@pytest.mark.clause("tb-device")
def test_collaters_of_lists_return_cpu_tensors(backend):
    """List items give CPU tensors: default_collater, and packed_sequence_thd_collater on
    pre-packed and on synthesized items."""
    padded = backend.default_collater(
        [
            {"input_ids": [1, 2, 3], "labels": [2, 3, 4], "attention_mask": [1, 1, 1]},
            {"input_ids": [4], "labels": [5], "attention_mask": [1]},
        ]
    )
    _assert_on("cpu", padded, call="default_collater(list items)")
    prepacked = backend.packed_sequence_thd_collater(
        [backend.pack_features_for_thd([{"input_ids": [1, 2, 3], "labels": [2, 3, 4]}, {"input_ids": [5, 6]}])]
    )
    _assert_on("cpu", prepacked, call="packed_sequence_thd_collater([pack_features_for_thd(...)])")
    synthesized = backend.packed_sequence_thd_collater(
        [{"input_ids": [1, 2, 3], "labels": [2, 3, 4]}, {"input_ids": [4], "labels": [5]}]
    )
    _assert_on("cpu", synthesized, call="packed_sequence_thd_collater(list items without seq_lens)")


@pytest.mark.requires("collaters")
@pytest.mark.clause("tb-device", "dcoll-fields")
@pytest.mark.parametrize("device", DEVICES)
def test_default_collater_keeps_the_device_of_tensor_fields(backend, device):
    """Items whose fields are all tensors (``[S]`` or ``[1, S]``, or pre-batched ``[B_i, D]``) on
    one device give tensors on that device, padding_mask included. (Scalar fields go through
    numpy on every backend that follows upstream, so they are not part of this check.)"""

    def tensor(values, dtype=torch.int64):
        return torch.tensor(values, dtype=dtype, device=device)

    batch = [
        {
            "input_ids": tensor([[1, 2, 0]]),
            "attention_mask": tensor([[1, 1, 0]]),
            "pixel_values": tensor([[0.5, 1.5]], torch.float32),
        },
        {
            "input_ids": tensor([3, 4, 5]),
            "attention_mask": tensor([1, 1, 1]),
            "pixel_values": tensor([[2.5, 3.5], [4.5, 5.5]], torch.float32),
        },
    ]
    want = batch[0]["input_ids"].device
    out = backend.default_collater(batch)
    _assert_on(want, out, call=f"default_collater(tensor fields on {want})")


# -- [tb-no-aliasing] --------------------------------------------------------------------------


@pytest.mark.clause("tb-no-aliasing", "ctb-no-mutation")
@pytest.mark.parametrize("form", ["lists", "numpy", "tensor"])
@pytest.mark.parametrize("options", CONVERT_CONFIGS)
def test_convert_text_batch_outputs_share_no_storage(backend, options, form):
    """On every route and option combination and payload form: no two output keys share storage
    (``attention_mask`` under a ``document_ids`` contract is not ``attention_document_ids``,
    ``_packed_seq_ids`` is a tensor of its own, THD's ``seq_lens_padded`` is not ``seq_lens``),
    no output shares storage with a payload array or tensor of the SampleBatch, and the call
    leaves the SampleBatch's records, payloads and meta as they were [ctb-no-mutation]."""
    batch = payload_form(sample_batch(options["rows"]), form)
    before = input_state(batch, "sample_batch")
    out, batch, call = call_convert(backend, options, form, batch)
    assert_batch_unchanged(before, batch, what="by the call", call=call)
    returned = _returned_tensors(out)
    _assert_no_pairs(shared_storage(returned), "every key should hold a tensor of its own", call=call)
    payload = {
        f"records[{b}].payload[{key!r}]": value
        for b, record in enumerate(batch.records)
        for key, value in record.payload.items()
        if isinstance(value, (torch.Tensor, np.ndarray))
    }
    _assert_no_pairs(
        shared_storage(returned, payload), "no output should share storage with the SampleBatch", call=call
    )


def _received(device: str = "cpu") -> dict[str, torch.Tensor]:
    """A mapping as convert_text_batch builds it, where ``input_ids`` and ``labels`` are two views
    of one storage: a pair the function received and may leave as it is."""
    ids = _ids(device)
    tokens = torch.arange(2 * ids.numel(), dtype=torch.int64, device=ids.device).reshape(2, *ids.shape)
    return {
        "input_ids": tokens[0],
        "labels": tokens[1],
        "position_ids": _positions(device),
        "padding_mask": ids == 0,
        "document_ids": ids,
    }


@pytest.mark.requires("adapt_model_inputs")
@pytest.mark.clause("tb-no-aliasing", "adapt-attention-ids")
@pytest.mark.parametrize("eligibility", [False, True], ids=["no-eligibility", "eligibility"])
def test_adapt_model_inputs_adds_a_tensor_of_its_own(backend, eligibility):
    batch = _received()
    before = dict(batch)
    args = [batch] + ([torch.ones(batch["document_ids"].shape, dtype=torch.bool)] if eligibility else [])
    out = backend.adapt_model_inputs(*args)
    _assert_new_entries_share_nothing(before, out, call=f"adapt_model_inputs(eligibility={eligibility})")


@pytest.mark.requires("adapt_model_inputs", "xdoc")
@pytest.mark.clause("tb-no-aliasing", "xdoc-untouched")
@pytest.mark.parametrize("axes", [None, 3], ids=["text", "mrope"])
def test_enable_xdoc_attention_adds_tensors_of_their_own(backend, axes):
    batch = _received()
    if axes is not None:
        batch["position_ids"] = batch["position_ids"].expand(axes, -1, -1).clone()
    backend.adapt_model_inputs(batch)
    before = dict(batch)
    out = backend.enable_xdoc_attention(batch, Contract())
    _assert_new_entries_share_nothing(before, out, call=f"enable_xdoc_attention(axes={axes})")


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("tb-no-aliasing", "thd-lengths")
@pytest.mark.parametrize("ids", [[[1, 1, 2, 2]], [[1, 1, 1, 0], [1, 2, 2, 2]]], ids=["no-padding", "padding"])
def test_convert_batch_output_thd_lengths_are_tensors_of_their_own(backend, ids):
    """seq_lens and seq_lens_padded are separate tensors, also where their values are equal."""
    batch = {"document_ids": long(ids), "attention_document_ids": long(ids)}
    before = dict(batch)
    out = backend.convert_batch_output(batch, "thd")
    _assert_new_entries_share_nothing(before, out, call=f"convert_batch_output(ids {ids}, 'thd')")


@pytest.mark.requires("packed_metadata")
@pytest.mark.clause("tb-no-aliasing")
@pytest.mark.parametrize("mask_kind", list(MASKS))
def test_build_packed_sequence_metadata_shares_nothing(backend, mask_kind):
    mask = MASKS[mask_kind]()
    out = backend.build_packed_sequence_metadata(mask)
    returned = {key: value for key, value in dict(out).items() if isinstance(value, torch.Tensor)}
    call = f"build_packed_sequence_metadata({mask_kind} mask {mask.tolist()})"
    _assert_no_pairs(shared_storage(returned), "each output should be a tensor of its own", call=call)
    _assert_no_pairs(
        shared_storage(returned, {"mask": mask}), "no output should share storage with the mask", call=call
    )


@pytest.mark.requires("unpad_data")
@pytest.mark.clause("tb-no-aliasing")
@pytest.mark.parametrize("mask_kind", list(MASKS))
def test_get_unpad_data_shares_nothing(backend, mask_kind):
    mask = MASKS[mask_kind]()
    indices, cu_seqlens, _ = backend.get_unpad_data(mask)
    returned = {"indices": indices, "cu_seqlens": cu_seqlens}
    call = f"get_unpad_data({mask_kind} mask {mask.tolist()})"
    _assert_no_pairs(shared_storage(returned), "each output should be a tensor of its own", call=call)
    _assert_no_pairs(
        shared_storage(returned, {"mask": mask}), "no output should share storage with the mask", call=call
    )
