"""``build_packed_sequence_metadata`` and ``get_unpad_data`` alone, on the document ids of the
pipeline rows and of the documents-per-row sweep, beside upstream nemo-automodel 0.7.0's."""

from __future__ import annotations

import importlib

import pytest

from batchspec.bench.test_convert import DOCUMENTS_PER_ROW
from batchspec.bench.workloads import document_ids_of, pipeline_batch, sweep_rows
from batchspec.conformance.helpers.sample_batches import rows_of

FUNCTIONS = ("build_packed_sequence_metadata", "get_unpad_data")
SHAPE = (8, 8192)


def _upstream(name: str):
    try:
        packing = importlib.import_module("nemo_automodel.components.datasets.packing")
    except ImportError:
        pytest.skip("upstream nemo-automodel 0.7.0 is not installed: pip install --no-deps nemo-automodel==0.7.0")
    return getattr(packing, name)


def _ids(documents: int | None, device: str):
    rows = rows_of(pipeline_batch(*SHAPE)) if documents is None else sweep_rows(documents)
    return document_ids_of(rows).to(device)


CASES = [None, *DOCUMENTS_PER_ROW]  # None: the pipeline rows (~25 documents per row)


def _workload(function: str, documents: int | None) -> tuple[str, str, dict]:
    if documents is None:
        return f"metadata/{function}/8x8192/pipeline", "metadata", {"payload": "pipeline"}
    return f"docs_per_row/{function}/{documents:04d}", "docs_per_row", {"documents_per_row": float(documents)}


def _measure(run, name, kind, call, function, documents, device):
    ids = _ids(documents, device)
    workload, family, extra = _workload(function, documents)
    run(
        lambda: call(ids),
        implementation=name,
        kind=kind,
        workload=workload,
        family=family,
        tokens=ids.numel(),
        shape="8x8192",
        route=function,
        floor_bytes=ids.nbytes * (3 if function == "build_packed_sequence_metadata" else 2),
        **extra,
    )


@pytest.mark.parametrize("documents", CASES, ids=lambda d: "pipeline" if d is None else f"{d}docs")
@pytest.mark.parametrize("function", FUNCTIONS)
def test_backend(run, backend, backend_name, function, documents, device):
    _measure(run, backend_name, "backend", getattr(backend, function), function, documents, device)


@pytest.mark.parametrize("documents", CASES, ids=lambda d: "pipeline" if d is None else f"{d}docs")
@pytest.mark.parametrize("function", FUNCTIONS)
def test_upstream(run, function, documents, device):
    _measure(run, "upstream", "comparator", _upstream(function), function, documents, device)
