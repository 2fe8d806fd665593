"""``convert_text_batch`` per route, shape and payload kind, beside Zephon's ``to_training``, the
payload ingest, and Hugging Face's flattening collator; and the documents-per-row curve.

Routes: ``document_ids`` mask with and without the metadata bundle, ``block_causal`` (S <= 8192:
its dense mask is O(S^2), reported as bytes written), xdoc (with metadata), THD, and the unpacked
``pad_to_length`` route. Payloads: ``pipeline`` (what the real corpus pipeline emits: list
``input_ids``, numpy ``positions``) and ``tensor`` (int64 tensors, on ``--device``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from batchspec.bench.conftest import skip_unless_reference_fits
from batchspec.bench.workloads import (
    SELECTED_SHAPES,
    SHAPES,
    documents_of,
    pipeline_batch,
    sweep_rows,
    tensor_batch,
    unpacked_batch,
)
from batchspec.conformance.helpers.sample_batches import Contract, payload_form, rows_of, sample_batch
from batchspec.conformance.run.device import sample_batch_to

ROUTES = {
    "document_ids": (Contract(packed_mask_type="document_ids"), False, "batched"),
    "document_ids+metadata": (
        Contract(packed_mask_type="document_ids", return_packed_sequence_metadata=True),
        False,
        "batched",
    ),
    "block_causal": (Contract(packed_mask_type="block_causal"), False, "batched"),
    "xdoc+metadata": (Contract(packed_mask_type="document_ids", return_packed_sequence_metadata=True), True, "batched"),
    "thd": (Contract(), False, "thd"),
    "unpacked": (Contract(packed_mask_type="document_ids", return_packed_sequence_metadata=True), False, "batched"),
}
PAYLOADS = ("pipeline", "tensor")
DOCUMENTS_PER_ROW = (1, 10, 40, 200, 1000)


def _shape_id(shape: tuple[int, int]) -> str:
    return f"{shape[0]}x{shape[1]}"


def _selected_shapes(config: pytest.Config) -> list[tuple[int, ...]]:
    """``--bench-shapes`` (any BxS, e.g. 64x32768 on a GPU), else ``SHAPES``."""
    selected = config.stash[SELECTED_SHAPES]
    return list(SHAPES) if selected is None else selected


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "shape" in metafunc.fixturenames:
        metafunc.parametrize("shape", _selected_shapes(metafunc.config), ids=_shape_id)


def workload_batch(route: str, shape: tuple[int, int], payload: str, device: str):
    """The ``SampleBatch`` a workload converts."""
    batch, sequence = shape
    if route == "unpacked":
        made = unpacked_batch(batch, sequence)
        return sample_batch_to(payload_form(made, "tensor"), device) if payload == "tensor" else made
    made = pipeline_batch(batch, sequence)
    return sample_batch_to(tensor_batch(made), device) if payload == "tensor" else made


def _output_bytes(out: dict) -> int:
    return sum(v.numel() * v.element_size() for v in out.values() if isinstance(v, torch.Tensor))


def _input_bytes(batch) -> int:
    total = 0
    for record in batch.records:
        for key in ("input_ids", "positions"):
            value = record.payload.get(key)
            if isinstance(value, (torch.Tensor, np.ndarray)):
                total += value.nbytes
            elif value is not None:
                total += 8 * len(value)
    return total


def _convert(backend, route: str, shape: tuple[int, int]):
    contract, xdoc, output_format = ROUTES[route]
    padded = {"pad_to_length": shape[1] + 1, "pad_token_id": 0} if route == "unpacked" else {}
    return lambda batch: backend.convert_text_batch(batch, contract, -100, False, xdoc, output_format, **padded)


def _convert_info(route: str, shape: tuple[int, int], payload: str) -> dict:
    """The ``extra_info`` of a ``convert`` workload (bench/conftest.py's schema)."""
    return {
        "workload": f"convert/{route}/{_shape_id(shape)}/{payload}",
        "family": "convert",
        "tokens": shape[0] * shape[1],
        "shape": _shape_id(shape),
        "route": route,
        "payload": payload,
    }


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("route", list(ROUTES))
def test_convert_text_batch(run, backend, backend_name, route, shape, payload, device):
    if route == "block_causal" and shape[1] > 8192:
        pytest.skip("block_causal's dense [B, 1, S, S] mask is O(S^2): benchmarked up to S = 8192")
    tokens = shape[0] * shape[1]
    skip_unless_reference_fits(backend_name, tokens)
    batch = workload_batch(route, shape, payload, device)
    convert = _convert(backend, route, shape)
    sample = convert(batch)
    out = run(
        lambda: convert(batch),
        implementation=backend_name,
        kind="backend",
        **_convert_info(route, shape, payload),
        floor_bytes=_input_bytes(batch) + _output_bytes(sample),
        mask_bytes=sample["attention_mask"].nbytes if route == "block_causal" else None,
    )
    assert out["input_ids"].shape == (shape[0], shape[1])


@pytest.mark.parametrize("payload", PAYLOADS)
def test_zephon_to_training(run, shape, payload, device):
    """Zephon 0.2.0's own conversion of the same objects (shift, labels, padding mask,
    ``cu_seqlens``): the cost of the part Zephon already does."""
    batch = workload_batch("document_ids+metadata", shape, payload, device)
    options = dict(return_labels=True, return_cu_seqlens=True, return_padding_mask=True)
    run(
        lambda: batch.to_training(**options),
        implementation="zephon.to_training",
        kind="comparator",
        **_convert_info("document_ids+metadata", shape, payload),
    )


@pytest.mark.parametrize("payload", PAYLOADS)
def test_ingest(run, shape, payload, device):
    """The payload's bulk conversion alone (token field and positions to one int64 tensor
    each): the floor of any conversion of this input."""
    batch = workload_batch("document_ids+metadata", shape, payload, device)

    def as_int64(value):
        # the fastest bulk conversion of each kind: numpy for a list, a view or cast otherwise
        return torch.from_numpy(np.asarray(value, dtype=np.int64)) if isinstance(value, list) else value

    def ingest():
        tokens = [as_int64(r.payload["input_ids"]) for r in batch.records]
        positions = [torch.as_tensor(r.payload["positions"]) for r in batch.records]
        return torch.stack(tokens), torch.stack(positions).to(torch.int64)

    run(
        ingest,
        implementation="ingest",
        kind="comparator",
        **_convert_info("document_ids+metadata", shape, payload),
    )


def test_hf_flattening_collator(run, shape):
    """What a user picks instead for THD-style packing: transformers' ``DataCollatorWithFlattening``
    (``position_ids`` and ``cu_seq_lens`` for varlen attention) on the same documents."""
    transformers = pytest.importorskip("transformers", reason="the bench extra installs transformers")
    collator = transformers.DataCollatorWithFlattening(return_flash_attn_kwargs=True, return_tensors="pt")
    features = [{"input_ids": d} for d in documents_of(rows_of(pipeline_batch(*shape)))]
    run(
        lambda: collator(features),
        implementation="hf.DataCollatorWithFlattening",
        kind="comparator",
        **_convert_info("thd", shape, "pipeline"),
    )


@pytest.mark.parametrize("documents", DOCUMENTS_PER_ROW)
def test_documents_per_row(run, backend, backend_name, documents):
    """8 x 8192, ``document_ids`` + metadata, pipeline payloads: flat in the document count means
    no per-document cost."""
    batch = sample_batch(sweep_rows(documents))
    convert = _convert(backend, "document_ids+metadata", (8, 8192))
    run(
        lambda: convert(batch),
        implementation=backend_name,
        kind="backend",
        workload=f"docs_per_row/convert/{documents:04d}",
        family="docs_per_row",
        tokens=8 * 8192,
        documents_per_row=float(documents),
        shape="8x8192",
        route="convert_text_batch",
        payload="pipeline",
    )
