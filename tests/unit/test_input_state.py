"""The suite's one input-mutation snapshot (``conformance/helpers/storage.py``: ``input_state`` /
``state_changes``) notices every in-place change that any of the three snapshots it replaced
noticed (issue 34: golden ``payload_state``, helpers ``batch_state`` and storage's own
``input_state``), and the changes each of them missed.

Each planted change below names the former snapshots that caught it on a ``SampleBatch``
("payload", "batch", "storage": storage's compared a ``SampleBatch`` by its ``repr``), or "none"
where all three missed it (measured at the commit that merged them).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from zephon import SampleBatch

from batchspec.conformance.helpers.asserts import ClauseFailure
from batchspec.conformance.helpers.sample_batches import Row, assert_batch_unchanged, sample_batch
from batchspec.conformance.helpers.storage import input_state, state_changes


def _batch() -> SampleBatch:
    """Two records with a token list, an int32 numpy ``positions``, a 2x2 tensor and a numpy array."""
    batch = sample_batch([Row((1, 2, 3), (0, 1, 2), 0), Row((4, 5), None, 1)])
    batch.records[0].payload["square"] = torch.ones(2, 2, dtype=torch.int64)
    batch.records[0].payload["array"] = np.arange(4, dtype=np.int64)
    return batch


def _set_padding_length(batch: SampleBatch) -> None:
    batch.records[1].meta.tags["_packing_metadata"]["padding_length"] = 0


def _same_values_new_storage(batch: SampleBatch) -> None:
    square = batch.records[0].payload["square"]
    square.set_(square.clone())


PLANTED: dict[str, tuple[str, Callable[[SampleBatch], object]]] = {
    # caught by all three (values, types and dtypes of payload fields; meta tags)
    "a token changed": ("payload, batch, storage", lambda b: b.records[0].payload["input_ids"].__setitem__(0, 9)),
    "a tensor value changed": ("payload, batch, storage", lambda b: b.records[0].payload["square"].fill_(7)),
    "a numpy value changed": ("payload, batch, storage", lambda b: b.records[0].payload["positions"].__setitem__(1, 5)),
    "a tensor dtype changed": (
        "payload, batch, storage",
        lambda b: b.records[0].payload.__setitem__("square", b.records[0].payload["square"].int()),
    ),
    "a payload field removed": ("payload, batch, storage", lambda b: b.records[0].payload.pop("positions")),
    "a payload field added": ("payload, batch, storage", lambda b: b.records[1].payload.__setitem__("labels", [1, 2])),
    "meta padding_length changed": ("payload, batch, storage", _set_padding_length),
    "a meta tag added": ("payload, batch, storage", lambda b: b.records[0].meta.tags.__setitem__("seen", True)),
    # caught by batch_state only (identity of the payload, its entries and the meta)
    "the payload dict replaced by an equal one": (
        "batch",
        lambda b: setattr(b.records[0], "payload", dict(b.records[0].payload)),
    ),
    "a payload entry replaced by an equal copy": (
        "batch",
        lambda b: b.records[0].payload.__setitem__("input_ids", list(b.records[0].payload["input_ids"])),
    ),
    "the record tuple replaced by an equal one": ("batch", lambda b: setattr(b, "records", tuple(list(b.records)))),
    # storage's input_state caught these on plain containers; on a SampleBatch all three missed them
    "a tensor transposed in place (same values)": ("none", lambda b: b.records[0].payload["square"].t_()),
    "a tensor moved to new storage (same values)": ("none", _same_values_new_storage),
    # caught by storage's only (the repr differs; the values compare equal)
    "a token list's element replaced by an equal int of another type": (
        "storage",
        lambda b: b.records[0].payload["input_ids"].__setitem__(0, np.int64(1)),
    ),
}


@pytest.mark.parametrize("planted", list(PLANTED))
def test_the_snapshot_notices_each_planted_change(planted: str) -> None:
    batch = _batch()
    before = input_state(batch, "sample_batch")
    assert state_changes(before, input_state(batch, "sample_batch")) == []
    PLANTED[planted][1](batch)
    changes = state_changes(before, input_state(batch, "sample_batch"))
    assert changes, f"{planted} went unnoticed"
    assert all(change.startswith("sample_batch.records") for change in changes), changes
    with pytest.raises(ClauseFailure) as raised:
        assert_batch_unchanged(before, batch, what="by the call", call="convert_text_batch(...)")
    assert raised.value.clauses == ("ctb-no-mutation",)


def test_a_lazily_filled_cache_is_not_a_change() -> None:
    """``SampleBatch.ids`` fills a ``compare=False`` cache on first read: reading is not mutating."""
    batch = _batch()
    before = input_state(batch, "sample_batch")
    assert batch.ids
    assert state_changes(before, input_state(batch, "sample_batch")) == []


def test_plain_containers_and_objects_keep_their_layout_checks() -> None:
    """What storage's ``input_state`` noticed on plain containers it still notices, and an object
    with a ``__dict__`` (a ``Datum``-like value) is walked, not compared by ``repr``."""
    tensor = torch.arange(6).reshape(2, 3)
    datum = SimpleNamespace(input_ids=torch.arange(4), loss_fn_inputs={"weights": torch.ones(4)})
    value = {"t": tensor, "datum": datum, "rows": [[1, 2], [3]]}
    before = input_state(value, "batch")
    tensor.resize_(3, 2)
    datum.loss_fn_inputs["weights"][0] = 0.0
    value["rows"][1].append(4)
    changes = state_changes(before, input_state(value, "batch"))
    assert [change.split(":")[0].split(" ")[0] for change in changes] == [
        "batch['t']",
        "batch['datum'].loss_fn_inputs['weights']",
        "batch['rows'][1]",
        "batch['rows'][1][1]",
    ], changes


def test_a_cycle_is_described_once() -> None:
    cycle: list = [1]
    cycle.append(cycle)
    state = input_state(cycle, "x")
    assert set(state) == {"x", "x[0]", "x[1]"}
    cycle[0] = 2
    assert state_changes(state, input_state(cycle, "x")) == ["x[0]: int 1 became int 2"]
