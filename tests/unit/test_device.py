"""``--device`` (conformance/run/device.py): the option's validation, and the wrapper's logic, run on
the CPU (``placed(fn, name, "cpu")`` still copies every input, so only the transfer differs from
an accelerator run) and with torch's ``meta`` device standing in for a device a backend should
not have returned tensors on."""

from __future__ import annotations

import dataclasses
import inspect
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from batchspec.conformance.helpers.sample_batches import Row, payload_form, sample_batch
from batchspec.conformance.run.backends import load_backend
from batchspec.conformance.run.device import (
    DeviceOptionError,
    check_device_option,
    device_problems,
    input_device,
    placed,
    sample_batch_to,
)
from batchspec.conformance.run.result_records import reproduce_command
from batchspec.conformance.run.stash import BACKEND, BACKEND_SPEC

CPU, META = torch.device("cpu"), torch.device("meta")

# -- the option --------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["tpu", "cuda:x", "cuda:", "cuda:-1", "CPU", "gpu", "cuda:0:1", " cpu"])
def test_other_forms_are_refused_naming_the_value_and_the_accepted_forms(value):
    with pytest.raises(DeviceOptionError) as error:
        check_device_option(value)
    assert repr(value) in str(error.value) and "cpu, cuda or cuda:N" in str(error.value)


def test_cpu_is_accepted():
    assert check_device_option("cpu") == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("value", ["cuda", "cuda:0", "cuda:7"])
def test_cuda_without_cuda_is_refused(value):
    with pytest.raises(DeviceOptionError, match="CUDA is not available on this machine") as error:
        check_device_option(value)
    assert repr(value) in str(error.value)


def test_a_cuda_index_past_the_devices_is_refused(monkeypatch):
    # A machine with two CUDA devices, stood in for on any machine.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    count = 2
    assert check_device_option(f"cuda:{count - 1}") == f"cuda:{count - 1}"
    with pytest.raises(DeviceOptionError, match=f"has {count} CUDA device"):
        check_device_option(f"cuda:{count}")


def _config(tmp_path, device: str = "cpu", command: bool = False, **options):
    """What ``reproduce_command`` reads of a pytest config."""
    values = {"--batchspec-command": command, "--release": False, "--expectations": None, **options}
    stash = pytest.Stash()
    stash[BACKEND] = dataclasses.replace(load_backend("reference"), device=device)
    stash[BACKEND_SPEC] = "reference"
    return SimpleNamespace(stash=stash, rootpath=tmp_path, getoption=values.__getitem__)


def test_the_reproduce_command_names_a_device_other_than_the_cpu(tmp_path):
    assert "--device" not in reproduce_command("t.py::x", _config(tmp_path))
    assert reproduce_command("t.py::x", _config(tmp_path, "cuda:1")).endswith("--backend=reference --device=cuda:1")


def test_under_the_batchspec_command_the_reproduce_command_is_that_command_with_the_run_options(tmp_path):
    config = _config(tmp_path, "cuda", command=True, **{"--release": True, "--expectations": "known failures.toml"})
    assert reproduce_command("conformance/t.py::x[a b]", config) == (
        "batchspec --backend=reference --device=cuda --release --expectations='known failures.toml' "
        "'conformance/t.py::x[a b]'"
    )


def _layers(function) -> tuple[int, object]:
    """How many wrappers (``__wrapped__``) lie around ``function``, and what they wrap."""
    layers = 0
    while hasattr(function, "__wrapped__"):
        function, layers = function.__wrapped__, layers + 1
    return layers, function


def test_the_backend_wraps_only_the_tensor_functions_off_the_cpu():
    """Every contract function is wrapped once to tag its exceptions (conformance/run/backends.py,
    ``raised_in``); off the CPU the tensor functions are wrapped once more, to run on the device;
    classes and constants are the backend's own objects."""
    backend = load_backend("reference")
    assert backend.device == "cpu" and _layers(backend.adapt_model_inputs) == (1, backend.impl.adapt_model_inputs)
    moved = dataclasses.replace(backend, device="meta")
    for name in ("get_unpad_data", "build_packed_sequence_metadata", "adapt_model_inputs", "convert_text_batch"):
        assert _layers(getattr(moved, name)) == (2, getattr(backend.impl, name)), name
    for name in ("collate_datums", "default_collater"):
        assert _layers(getattr(moved, name)) == (1, getattr(backend.impl, name)), name
    for name in ("Datum", "ZephonDataLoader", "DEFAULT_PACKED_SEQUENCE_CONTRACT"):
        assert getattr(moved, name) is getattr(backend.impl, name)


# -- the [tb-device] check ---------------------------------------------------------------------


def test_device_problems_name_the_key_and_both_devices():
    good, bad = torch.zeros(2), torch.empty(2, device="meta")
    assert device_problems({"a": good, "n": 3, "s": "thd"}, "cpu") == []
    (problem,) = device_problems({"a": good, "cu_seqlens": bad}, "cpu")
    assert "'cu_seqlens'" in problem and "meta" in problem and "cpu" in problem
    (problem,) = device_problems((good, bad, 5), CPU)
    assert "item 1" in problem and "meta" in problem and "cpu" in problem
    (problem,) = device_problems(good, META)
    assert "the returned tensor" in problem and "is on cpu, expected meta" in problem
    assert device_problems(None, "cpu") == []


def test_input_device_follows_the_rule_of_each_function():
    assert input_device("get_unpad_data", (torch.empty(2, device="meta"),), {}) == META
    assert input_device("adapt_model_inputs", ({"document_ids": torch.empty(2, device="meta")},), {}) == META
    assert input_device("adapt_model_inputs", ({"a": torch.zeros(1), "b": torch.empty(1, device="meta")},), {}) == CPU
    assert input_device("get_unpad_data", ([[1, 0]],), {}) == CPU
    batch = sample_batch([Row((1, 2, 3), (0, 1, 2), 0), Row((4, 5, 6), None, 0)])
    assert input_device("convert_text_batch", (batch, None, -100, True, False), {}) == CPU  # lists
    moved = sample_batch_to(payload_form(batch, "tensor"), "meta")
    assert input_device("convert_text_batch", (), {"sample_batch": moved}) == META
    moved.records[1].payload["input_ids"] = [4, 5, 6]  # not every token field a tensor: the CPU
    assert input_device("convert_text_batch", (moved,), {}) == CPU


# -- the SampleBatch copy ----------------------------------------------------------------------


def test_sample_batch_to_moves_tensor_payloads_and_leaves_the_batch_untouched():
    batch = sample_batch([Row((1, 2, 3, 0), (0, 1, 2, 0), 1), Row((4, 5, 6, 7), (0, 1, 0, 1), 0)])
    record = batch.records[0]
    tokens = torch.tensor([1, 2, 3, 0])
    record.payload["input_ids"] = tokens  # a tensor token field; positions stay int32 numpy
    batch.records[1].payload["extra"] = [9, 9]
    payloads = [dict(r.payload) for r in batch.records]

    moved = sample_batch_to(batch, "meta")

    assert moved is not batch and len(moved.records) == 2
    for new, old, before in zip(moved.records, batch.records, payloads):
        assert new is not old and new.meta is old.meta and new.payload is not old.payload
        assert set(new.payload) == set(old.payload)
        assert all(old.payload[key] is value for key, value in before.items()), "the original payload changed"
    assert moved.records[0].payload["input_ids"].device == META
    assert moved.records[0].payload["positions"] is record.payload["positions"]  # numpy: shared
    assert moved.records[1].payload["input_ids"] is batch.records[1].payload["input_ids"]  # a list: shared
    assert moved.records[1].payload["extra"] is batch.records[1].payload["extra"]
    assert tokens.device == CPU and tokens.tolist() == [1, 2, 3, 0]
    assert moved.lane_ids == batch.lane_ids


def test_sample_batch_to_copies_even_to_the_cpu_and_keeps_a_batch_of_lists():
    batch = payload_form(sample_batch([Row((1, 2), None, 0)]), "tensor")
    moved = sample_batch_to(batch, "cpu")
    original = batch.records[0].payload["input_ids"]
    copy = moved.records[0].payload["input_ids"]
    assert copy is not original and copy.untyped_storage().data_ptr() != original.untyped_storage().data_ptr()
    lists = sample_batch([Row((1, 2), None, 0)])
    assert sample_batch_to(lists, "cpu") is lists


# -- the wrapper -------------------------------------------------------------------------------


def test_a_result_off_the_inputs_device_fails_on_tb_device():
    def metadata(mask):
        return {"packed_token_indices": mask.clone(), "cu_seqlens": torch.empty(3, device="meta"), "max_seqlen": 2}

    with pytest.raises(AssertionError) as error:
        placed(metadata, "build_packed_sequence_metadata", "cpu")(torch.ones(1, 3, dtype=torch.int64))
    message = str(error.value)
    assert "[tb-device]" in message and "'cu_seqlens'" in message and "meta" in message and "cpu" in message


def test_the_backends_exception_propagates_unchanged():
    raised = ValueError("attention_mask must be 2-D, got shape (3,)")

    def get_unpad_data(mask):
        raise raised

    with pytest.raises(ValueError) as error:
        placed(get_unpad_data, "get_unpad_data", "cpu")(torch.ones(3))
    assert error.value is raised


def test_results_are_returned_on_the_callers_device_with_their_types():
    def get_unpad_data(mask):
        assert mask.device == CPU
        return mask.flatten().nonzero().flatten(), torch.tensor([0, 2], dtype=torch.int32), 2

    mask = torch.tensor([[1, 1]])
    out = placed(get_unpad_data, "get_unpad_data", "cpu")(mask)
    assert type(out) is tuple and out[2] == 2 and out[1].dtype == torch.int32 and out[0].tolist() == [0, 1]


def test_an_in_place_write_to_an_input_reaches_the_callers_tensor():
    def get_unpad_data(mask):
        mask[0, 0] = 7  # a backend that writes to its input: the caller's no-mutation checks must see it
        return mask.flatten().nonzero().flatten(), torch.tensor([0, 2], dtype=torch.int32), 2

    mask = torch.tensor([[1, 1]])
    untouched = torch.tensor([[1, 1]])
    placed(get_unpad_data, "get_unpad_data", "cpu")(mask)
    assert mask.tolist() == [[7, 1]]

    def reads(mask):
        return mask.flatten().nonzero().flatten(), torch.tensor([0, 2], dtype=torch.int32), 2

    placed(reads, "get_unpad_data", "cpu")(untouched)
    assert untouched.tolist() == [[1, 1]]


def test_a_returned_input_mapping_is_the_callers_mapping_updated():
    def adapt_model_inputs(batch, attention_eligibility=None):
        assert batch is not caller  # the wrapper passes a copy of the mapping
        batch["attention_document_ids"] = batch["document_ids"] * attention_eligibility
        batch["position_ids"] = batch["position_ids"] + 1  # replaced
        del batch["gone"]
        batch["document_ids"].add_(0)  # values unchanged: the caller's tensor is not written
        return batch

    ids, positions = torch.tensor([[1, 1, 2]]), torch.tensor([[0, 1, 0]])
    caller = {"document_ids": ids, "position_ids": positions, "gone": torch.zeros(1), "note": "text"}
    eligibility = torch.tensor([[True, False, True]])

    out = placed(adapt_model_inputs, "adapt_model_inputs", "cpu")(caller, attention_eligibility=eligibility)

    assert out is caller and list(out) == ["document_ids", "position_ids", "note", "attention_document_ids"]
    assert out["document_ids"] is ids and ids.tolist() == [[1, 1, 2]]  # left in place: the caller's own object
    assert out["position_ids"] is not positions and out["position_ids"].tolist() == [[1, 2, 1]]
    assert positions.tolist() == [[0, 1, 0]] and out["note"] == "text"
    assert out["attention_document_ids"].tolist() == [[1, 0, 2]] and out["attention_document_ids"].device == CPU
    assert eligibility.tolist() == [[True, False, True]]


def test_an_in_place_write_to_a_mapping_tensor_reaches_the_callers_tensor():
    def enable_xdoc_attention(batch, packing_contract):
        batch["position_ids"][0, 2] = 99
        return batch

    positions = torch.tensor([[0, 1, 0]])
    caller = {"position_ids": positions}
    assert placed(enable_xdoc_attention, "enable_xdoc_attention", "cpu")(caller, None) is caller
    assert caller["position_ids"] is positions and positions.tolist() == [[0, 1, 99]]


def test_a_new_mapping_that_holds_an_input_tensor_gives_back_the_callers_tensor():
    def convert_batch_output(batch, output_format):
        return dict(batch, seq_lens=torch.tensor([[3]]))  # a new mapping (not what the SPEC says)

    ids = torch.tensor([[1, 1, 1]])
    caller = {"attention_document_ids": ids}
    out = placed(convert_batch_output, "convert_batch_output", "cpu")(caller, "thd")
    assert out is not caller and out["attention_document_ids"] is ids and set(caller) == {"attention_document_ids"}


def test_convert_text_batch_gets_a_copy_and_its_payload_writes_are_mirrored():
    batch = payload_form(sample_batch([Row((5, 6, 7, 0), (0, 1, 2, 0), 1)]), "tensor")
    record = batch.records[0]
    tokens, positions = record.payload["input_ids"], record.payload["positions"]
    seen = []

    def convert_text_batch(sample_batch, *args):
        seen.append(sample_batch)
        payload = sample_batch.records[0].payload
        payload["input_ids"][3] = -1  # written in place
        payload["positions"] = payload["positions"] + 0  # replaced
        return {"input_ids": payload["input_ids"][:-1].clone(), "qkv_format": "thd"}

    out = placed(convert_text_batch, "convert_text_batch", "cpu")(batch, None, -100, True, False)

    assert seen[0] is not batch and seen[0].records[0].meta is record.meta
    assert record.payload["input_ids"] is tokens and tokens.tolist() == [5, 6, 7, -1]
    assert record.payload["positions"] is not positions and positions.tolist() == [0, 1, 2, 0]
    assert out["input_ids"].tolist() == [5, 6, 7] and out["qkv_format"] == "thd"


def test_convert_text_batch_of_lists_gets_the_batch_itself_and_must_return_cpu_tensors():
    batch = sample_batch([Row((5, 6, 7), None, 0)])
    seen = []

    def convert_text_batch(sample_batch, *args):
        seen.append(sample_batch)
        return {"input_ids": torch.empty(2, dtype=torch.int64, device="meta")}

    with pytest.raises(AssertionError, match=r"\[tb-device\].*'input_ids' is on meta, expected cpu"):
        placed(convert_text_batch, "convert_text_batch", "cpu")(batch, None, -100, True, False)
    assert seen == [batch] and isinstance(batch.records[0].payload["input_ids"], list)


def test_the_wrapper_keeps_the_signature_and_numpy_payloads():
    def convert_text_batch(
        sample_batch, packing_contract, ignore_index, mask_segment_starts, xdoc, output_format="batched"
    ):
        assert isinstance(sample_batch.records[0].payload["positions"], np.ndarray)
        return {}

    wrapped = placed(convert_text_batch, "convert_text_batch", "cpu")

    assert inspect.signature(wrapped) == inspect.signature(convert_text_batch)
    batch = sample_batch([Row((5, 6, 7), (0, 1, 2), 0)])
    batch.records[0].payload["input_ids"] = torch.tensor([5, 6, 7])
    assert wrapped(batch, None, -100, True, False) == {}
