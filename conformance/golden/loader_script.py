"""``ZephonDataLoader`` scenario scripts (golden/cases/loader.py): a loader over a stand-in
pipeline of the stored batches, driven by a script of actions."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from batchspec.conformance.golden.call_arguments import build_contract, build_sample_batch
from batchspec.conformance.golden.errors import GoldenError
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.pipelines import RecordingPipeline
from batchspec.conformance.helpers.storage import input_state, state_changes

__all__ = ["run_loader"]


def run_loader(impl: Any, inputs: Mapping[str, Any], o: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """A ``ZephonDataLoader`` scenario: build the loader over a stand-in pipeline of
    ``inputs["batches"]`` with ``convert_text_batch`` bound to the options, play
    ``o["script"]`` ("next" / "iter" / "close"), and report each action's outcome and what
    the pipeline saw. ``next`` gives the converted batch, ``"StopIteration"``, or
    ``{"raised": type, "same_exception": bool}``; ``iter`` gives whether
    ``iter(loader) is loader``; ``close`` gives ``None``."""
    batches = [build_sample_batch(b) for b in inputs["batches"]]
    before = [input_state(b, "sample_batch") for b in batches]
    failure = RuntimeError("pipeline worker failed") if o.get("fail_at") is not None else None
    pipeline = RecordingPipeline(batches, o.get("fail_at"), failure)
    contract = build_contract(o.get("contract"))
    output_format = o.get("output_format", "batched")
    convert = functools.partial(
        impl.convert_text_batch,
        packing_contract=contract,
        ignore_index=o.get("ignore_index", IGNORE_INDEX),
        mask_segment_starts=o.get("mask_segment_starts", False),
        allow_cross_document_attention=o.get("xdoc", False),
        output_format=output_format,
    )
    seen: list = []
    convert_failure = ValueError("conversion failed")

    def convert_batch(sample_batch):
        seen.append(sample_batch)
        if len(seen) - 1 == o.get("convert_fails_at"):
            raise convert_failure
        return convert(sample_batch)

    if o.get("convert") == "not_callable":
        convert_batch = "not callable"  # type: ignore[assignment]
    if o.get("contract_positional"):
        loader = impl.ZephonDataLoader(pipeline, convert_batch, output_format, contract)
    else:
        loader = impl.ZephonDataLoader(pipeline, convert_batch, output_format, packing_contract=contract)
    at_construction = pipeline.iter_calls
    outcomes: list[Any] = []
    for action in o["script"]:
        if action == "iter":
            outcomes.append(iter(loader) is loader)
        elif action == "close":
            outcomes.append(loader.close())
        elif action == "next":
            try:
                outcomes.append(next(loader))
            except StopIteration:
                outcomes.append("StopIteration")
            except Exception as error:  # recorded and compared
                # The type, and whether it is the injected exception itself [loader-failure-closes];
                # never the message, which is not normative text.
                outcomes.append(
                    {"raised": type(error).__name__, "same_exception": error is failure or error is convert_failure}
                )
        else:
            raise GoldenError(f"unknown loader action {action!r}")
    out = {
        "outcomes": outcomes,
        "iter_calls_at_construction": at_construction,
        "iter_calls": pipeline.iter_calls,
        "stream_closed": pipeline.closed,
        "batches_converted": len(seen),
        "converted_in_stream_order": all(a is b for a, b in zip(seen, batches)),
    }
    changed = [
        f"SampleBatch {i}: {change} [loader-next]"
        for i, (b, s) in enumerate(zip(batches, before))
        for change in state_changes(s, input_state(b, "sample_batch"))
    ]
    return out, changed
