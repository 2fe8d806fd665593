"""Golden files: the only code that reads or writes ``golden/data`` and ``golden/index.json``.

A golden case is defined once, in ``golden/cases/<area>.py``, as a function ``case_<name>()``
returning a ``Case``. A case with ``expected`` (or ``error``) is *canon*: its expected values
are hand-written literals, and the reference must agree with them or generation fails. A case
without is *generated*: its expected values come from the reference.

On disk each case is ``golden/data/<name>/{record.json,inputs.safetensors,expected.safetensors}``
and ``golden/index.json`` maps every file to its sha256. Loading checks that a file is indexed
and that its sha256 matches *before* parsing it, parses tensors with
``safetensors.torch.load`` and records with ``json.loads`` (never pickle), and rejects any file
under ``golden/data`` that the index does not list.

Commands::

    python -m conformance.goldens                # regenerate every case, rewrite the index
    python -m conformance.goldens --check        # regenerate in memory; exit 1 on any difference
    python -m conformance.goldens --render-spec  # rewrite SPEC.md's <!-- golden:NAME --> blocks
"""

from __future__ import annotations

import argparse
import copy
import functools
import hashlib
import importlib.util
import inspect
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from conformance._asserts import Fact, Shape, Value, assert_raises, assert_tensor_equal, summary
from conformance._examples import long
from conformance._pipelines import RecordingPipeline
from conformance._state_script import run_state_script
from conformance._zephon import Contract, Row, sample_batch
from conformance.spec import spec_version

__all__ = [
    "ROOT",
    "Case",
    "GoldenError",
    "StoredCase",
    "all_cases",
    "build_files",
    "capabilities_of",
    "check",
    "load_all",
    "regenerate",
    "render_spec",
    "run_stored_case",
]

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "golden"
SPEC = REPO / "SPEC.md"
TENSOR = "$tensor"  # marks a tensor in a JSON skeleton: {"$tensor": "<key in the safetensors file>"}
RECORD, INPUTS, EXPECTED = "record.json", "inputs.safetensors", "expected.safetensors"
# Functions whose output key order is part of the contract (SPEC.md, "``Datum`` and the canonical collaters").
ORDERED_OUTPUT = {
    "collate_datums",
    "default_collater",
    "packed_sequence_thd_collater",
    "pack_features_for_thd",
    "Datum.to_features",
}
REGENERATE = "python -m conformance.goldens"


class GoldenError(Exception):
    """A golden file is unindexed, missing, tampered with, stale, or unreadable; or a
    reference disagrees with a canon case."""


# ------------------------------------------------------------------------------ cases ----


@dataclass(frozen=True)
class Case:
    """One golden case. ``expected`` given (hand-written) or ``error`` given: canon;
    both ``None``: generated from the reference.

    ``error`` is ``(type name, facts)``: the call raises that type (or a subclass) whose
    message names every fact (``conformance._asserts.names``: a str as a whole word, an int as
    a whole integer, ``Shape(...)``, ``Value(...)``); the wording is never pinned."""

    name: str
    clauses: tuple[str, ...]
    description: str
    function: str
    inputs: Mapping[str, Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    expected: Mapping[str, Any] | None = None
    error: tuple[str, tuple[Fact, ...]] | None = None
    keys: tuple[str, ...] | None = None  # canon only: the exact output keys, when the case pins them
    # generated scripted cases only: the reference's run records a raised error on purpose (else
    # generation refuses a generated case whose run raises: it would pin an accident)
    expects_error: bool = False
    generator: str = ""  # "golden/cases/<area>.py::case_<name>", filled in by the registry

    @property
    def kind(self) -> str:
        return "canon" if self.expected is not None or self.error is not None else "generated"


def rows(*rows: Row | Mapping[str, Any], **common: Any) -> dict[str, Any]:
    """``convert_text_batch`` inputs: each ``Row`` (or ``{"row": Row, <record options>}``)
    becomes ``{"tokens": int64, "positions": int64 | None, "padding_length": int | None, ...}``.
    Record options: ``field`` (token field name), ``payload_dtype`` ("int32": torch payloads),
    ``tags`` (replaces ``meta.tags["_packing_metadata"]``), ``drop_positions`` (delete
    ``positions`` after the tag was computed), ``extra`` ({name: tensor} payload fields)."""
    out = []
    for item in rows:
        options = dict(item) if isinstance(item, Mapping) else {"row": item}
        row = options.pop("row")
        out.append(
            {
                "tokens": long(list(row.tokens)),
                "positions": None if row.positions is None else long(list(row.positions)),
                "padding_length": row.padding_length,
                **options,
            }
        )
    return {"rows": out, **common}


def _case_modules() -> list[Path]:
    return sorted((ROOT / "cases").glob("*.py"))


def all_cases() -> list[Case]:
    """Every ``case_*`` of ``golden/cases/*.py``, in file then definition order. Names must
    be unique and start with ``test_``."""
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in _case_modules():
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"golden_cases_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        functions = [(n, f) for n, f in vars(module).items() if n.startswith("case_") and callable(f)]
        functions.sort(key=lambda item: inspect.getsourcelines(item[1])[1])
        for fname, function in functions:
            made = function()
            for case in made if isinstance(made, list) else [made]:
                where = f"golden/cases/{path.name}::{fname}"
                if not case.name.startswith("test_"):
                    raise GoldenError(f"{where}: case name {case.name!r} must start with 'test_'")
                if case.name in seen:
                    raise GoldenError(f"{where}: duplicate case name {case.name!r} (also in {seen[case.name]})")
                seen[case.name] = where
                cases.append(_with_generator(case, where))
    return cases


def _with_generator(case: Case, where: str) -> Case:
    from dataclasses import replace

    return replace(case, generator=where)


# ------------------------------------------------------------------ calling a backend ----


def capabilities_of(function: str, options: Mapping[str, Any]) -> tuple[str, ...]:
    """The backend capabilities (conformance/backends.py) a case needs."""
    if function == "convert_text_batch":
        caps = ["convert_text_batch"]
        if options.get("output_format") == "thd":
            caps.append("thd")
        if options.get("xdoc"):
            caps.append("xdoc")
        if options.get("pad_to_length") is not None:
            caps.append("unpacked")
        return tuple(caps)
    if function == "ZephonDataLoader.state":
        return ("zephon_loader", "zephon_state")
    if function == "ZephonDataLoader":
        caps = ["zephon_loader", "convert_text_batch"]
        if options.get("output_format") == "thd":
            caps.append("thd")
        return tuple(caps)
    return {
        "build_packed_sequence_metadata": ("packed_metadata",),
        "get_unpad_data": ("unpad_data",),
        "adapt_model_inputs": ("adapt_model_inputs",),
        "enable_xdoc_attention": ("xdoc",),
        "convert_batch_output": ("convert_batch_output",),
        "require_supported_packing_contract": ("contract_types",),
        "DEFAULT_PACKED_SEQUENCE_CONTRACT": ("contract_types",),
        "Datum": ("datum",),
        "Datum.to_features": ("datum",),
        "collate_datums": ("datum",),
        "default_collater": ("collaters",),
        "packed_sequence_thd_collater": ("collaters",),
        "pack_features_for_thd": ("collaters",),
    }[function]


def _contract(spec: Mapping[str, Any] | None) -> Any:
    spec = dict(spec or {})
    if spec.pop("minimal", False):  # a plain object with only the given attributes
        return SimpleNamespace(**spec)
    if set(spec) <= {
        "packed_mask_type",
        "return_packed_sequence_metadata",
        "return_document_ids",
        "max_sequence_length",
    }:
        return Contract(**spec)
    return SimpleNamespace(**spec)


def _sample_batch(rows_in: list[Mapping[str, Any]]):
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
            payload[name] = value.clone() if isinstance(value, torch.Tensor) else value
        if r.get("field", "input_ids") != "input_ids":
            payload[r["field"]] = payload.pop("input_ids")
    return batch


def _payload_state(batch) -> list:
    return [
        (
            {k: (v.tolist() if hasattr(v, "tolist") else copy.deepcopy(v)) for k, v in r.payload.items()},
            copy.deepcopy(r.meta.tags),
        )
        for r in batch.records
    ]


def _tensors(value: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor inside nested dicts/lists/objects with ``__dict__``, by path."""
    if isinstance(value, torch.Tensor):
        return {prefix: value}
    found: dict[str, torch.Tensor] = {}
    items = (
        value.items()
        if isinstance(value, Mapping)
        else enumerate(value)
        if isinstance(value, (list, tuple))
        else vars(value).items()
        if hasattr(value, "__dict__")
        else ()
    )
    for key, item in items:
        found.update(_tensors(item, f"{prefix}.{key}" if prefix else str(key)))
    return found


def _datum(impl, spec: Mapping[str, Any]):
    if "loss_fn_inputs" in spec:
        return impl.Datum(spec["input_ids"], dict(spec["loss_fn_inputs"]))
    return impl.Datum(spec["input_ids"])


def _run_loader(impl: Any, inputs: Mapping[str, Any], o: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """A ``ZephonDataLoader`` scenario: build the loader over a stand-in pipeline of
    ``inputs["batches"]`` with ``convert_text_batch`` bound to the options, play
    ``o["script"]`` ("next" / "iter" / "close"), and report each action's outcome and what
    the pipeline saw. ``next`` gives the converted batch, ``"StopIteration"``, or
    ``{"raised": type, "same_exception": bool}``; ``iter`` gives whether
    ``iter(loader) is loader``; ``close`` gives ``None``."""
    batches = [_sample_batch(b) for b in inputs["batches"]]
    before = [_payload_state(b) for b in batches]
    failure = RuntimeError("pipeline worker failed") if o.get("fail_at") is not None else None
    pipeline = RecordingPipeline(batches, o.get("fail_at"), failure)
    contract = _contract(o.get("contract"))
    output_format = o.get("output_format", "batched")
    convert = functools.partial(
        impl.convert_text_batch,
        packing_contract=contract,
        ignore_index=o.get("ignore_index", -100),
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
            except Exception as error:  # noqa: BLE001 - recorded and compared
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
        "batches_taken": pipeline.taken,
        "stream_closed": pipeline.closed,
        "batches_converted": len(seen),
        "converted_in_stream_order": all(a is b for a, b in zip(seen, batches)),
    }
    changed = [
        f"SampleBatch {i}'s payloads or tags [loader-next]"
        for i, (b, s) in enumerate(zip(batches, before))
        if _payload_state(b) != s
    ]
    return out, changed


def call(impl: Any, function: str, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """Call ``function`` of ``impl`` (a backend or the ``reference`` module) on decoded
    ``inputs``; return the normalized output and a list of input mutations it caused."""
    inputs = copy.deepcopy(dict(inputs))
    o = dict(options)
    if function == "ZephonDataLoader":
        return _run_loader(impl, inputs, o)
    if (
        function == "ZephonDataLoader.state"
    ):  # single-process checkpoint state over real pipelines: conformance/_state_script.py
        return run_state_script(impl, inputs, o), []
    if function == "convert_text_batch":
        batch = _sample_batch(inputs["rows"])
        before = _payload_state(batch)
        out = impl.convert_text_batch(
            batch,
            _contract(o.get("contract")),
            o.get("ignore_index", -100),
            o.get("mask_segment_starts", False),
            o.get("xdoc", False),
            o.get("output_format", "batched"),
            o.get("pad_to_length"),
            o.get("pad_token_id"),
        )
        changed = ["the SampleBatch's payloads or tags [ctb-no-mutation]"] if _payload_state(batch) != before else []
        return out, changed
    # (the tensor object itself, a copy): a function may replace mapping entries, never modify a tensor in place
    snapshot = {k: (v, v.clone()) for k, v in _tensors(inputs).items()}

    def mutations() -> list[str]:
        return [
            f"input tensor {k} was modified in place"
            for k, (v, copy_) in snapshot.items()
            if not (v.dtype == copy_.dtype and v.shape == copy_.shape and torch.equal(v, copy_))
        ]

    if function in {"build_packed_sequence_metadata", "get_unpad_data"}:
        result = getattr(impl, function)(inputs["mask"])
        if function == "get_unpad_data":
            indices, cu_seqlens, max_seqlen = result
            result = {"indices": indices, "cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen}
        return result, mutations()
    if function == "adapt_model_inputs":
        args = [inputs["batch"]] + ([inputs["attention_eligibility"]] if "attention_eligibility" in inputs else [])
        return impl.adapt_model_inputs(*args), mutations()
    if function == "enable_xdoc_attention":
        return impl.enable_xdoc_attention(inputs["batch"], _contract(o.get("contract"))), mutations()
    if function == "convert_batch_output":
        return impl.convert_batch_output(inputs["batch"], o["output_format"]), mutations()
    if function == "require_supported_packing_contract":
        contract = SimpleNamespace(**o["contract"])
        before = dict(vars(contract))
        result = impl.require_supported_packing_contract(contract)
        return {"returns": result}, ([] if vars(contract) == before else ["the contract was modified"])
    if function == "DEFAULT_PACKED_SEQUENCE_CONTRACT":
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
    if function == "Datum":
        d = _datum(impl, inputs)
        return {"input_ids": d.input_ids, "loss_fn_inputs": dict(d.loss_fn_inputs), "seq_len": d.seq_len}, []
    if function == "Datum.to_features":
        d = _datum(impl, inputs)
        state = {k: v.clone() for k, v in _tensors(d).items()}
        out = d.to_features(**({"ignore_index": o["ignore_index"]} if "ignore_index" in o else {}))
        after = _tensors(d)
        return out, [f"datum {k} changed" for k, v in state.items() if not torch.equal(after[k], v)]
    if function == "collate_datums":
        datums = [_datum(impl, spec) for spec in inputs["datums"]]
        state = {k: v.clone() for k, v in _tensors(datums).items()}
        keys = [sorted(d.loss_fn_inputs) for d in datums]
        kwargs = {k: o[k] for k in ("packed", "pad_seq_len_divisible", "ignore_index") if k in o}
        out = impl.collate_datums(datums, *o.get("positional", ()), **kwargs)
        after = _tensors(datums)
        bad = [
            f"datum {k} changed [collate-no-mutation]"
            for k, v in state.items()
            if k not in after or not torch.equal(after[k], v)
        ]
        if [sorted(d.loss_fn_inputs) for d in datums] != keys:
            bad.append("a datum's loss_fn_inputs keys changed [collate-no-mutation]")
        return out, bad
    if function == "default_collater":
        return impl.default_collater(
            inputs["batch"], *([o["pad_seq_len_divisible"]] if "pad_seq_len_divisible" in o else [])
        ), []
    if function == "packed_sequence_thd_collater":
        return impl.packed_sequence_thd_collater(inputs["batch"]), []
    if function == "pack_features_for_thd":
        kwargs = {"ignore_index": o["ignore_index"]} if "ignore_index" in o else {}
        return impl.pack_features_for_thd(inputs["features"], **kwargs), []
    raise GoldenError(f"unknown golden function {function!r}")


def _plain(value: Any) -> Any:
    """An output as JSON-able data plus tensors (dict order kept, tuples as lists)."""
    if isinstance(value, torch.Tensor) or value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    raise GoldenError(f"cannot store an output value of type {type(value).__name__}")


def compare(actual: Any, expected: Any, *, clause: str, call_text: str, path: str = "") -> None:
    """``expected`` (tensors and JSON values, possibly a subset of keys) equals ``actual``:
    tensors exactly, dtype included; other values with ``==`` and the same type."""
    __tracebackhide__ = True
    name = path or "output"
    if isinstance(expected, torch.Tensor):
        assert_tensor_equal(name, actual, expected, clause=clause, call=call_text)
    elif isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            shown = repr(expected) if not _tensors(expected) and len(repr(expected)) <= 300 else "a mapping"
            raise AssertionError(f"{name}: {summary(actual)}, but should be {shown} [{clause}: {call_text}]")
        for key, want in expected.items():
            if key not in actual:
                raise AssertionError(
                    f"key {key!r} is missing, but should be present; keys: {list(actual)} [{clause}: {call_text}]"
                )
            compare(actual[key], want, clause=clause, call_text=call_text, path=f"{path}.{key}" if path else key)
    elif isinstance(expected, list):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise AssertionError(f"{name}={summary(actual)}, but should be {expected!r} [{clause}: {call_text}]")
        for i, (a, w) in enumerate(zip(actual, expected)):
            compare(a, w, clause=clause, call_text=call_text, path=f"{name}[{i}]")
    elif type(actual) is not type(expected) or actual != expected:
        raise AssertionError(f"{name}={summary(actual)}, but should be {summary(expected)} [{clause}: {call_text}]")


def check_keys(function: str, actual: Any, keys: list[str] | None, *, clause: str, call_text: str) -> None:
    __tracebackhide__ = True
    if keys is None:
        return
    got = list(actual)
    if function in ORDERED_OUTPUT:
        if got != keys:
            raise AssertionError(f"keys {got}, but should be {keys} (in this order) [{clause}: {call_text}]")
    elif sorted(got) != sorted(keys):
        raise AssertionError(f"keys {sorted(got)}, but should be {sorted(keys)} [{clause}: {call_text}]")


# ------------------------------------------------------------------- serialization ----


def _split(value: Any, prefix: str, tensors: dict[str, torch.Tensor]) -> Any:
    """A JSON skeleton of ``value``; tensors move into ``tensors`` under their path."""
    if isinstance(value, torch.Tensor):
        tensors[prefix] = value.detach().contiguous().clone()
        return {TENSOR: prefix}
    if isinstance(value, Mapping):
        return {str(k): _split(v, f"{prefix}.{k}" if prefix else str(k), tensors) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_split(v, f"{prefix}.{i}" if prefix else str(i), tensors) for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise GoldenError(f"{prefix}: cannot store a value of type {type(value).__name__}")


def _join(skeleton: Any, tensors: Mapping[str, torch.Tensor], where: str) -> Any:
    if isinstance(skeleton, Mapping):
        if set(skeleton) == {TENSOR}:
            key = skeleton[TENSOR]
            if key not in tensors:
                raise GoldenError(f"{where}: the record names tensor {key!r}, which the safetensors file lacks")
            return tensors[key]
        return {k: _join(v, tensors, where) for k, v in skeleton.items()}
    if isinstance(skeleton, list):
        return [_join(v, tensors, where) for v in skeleton]
    return skeleton


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=False, ensure_ascii=True) + "\n").encode()


def _fact_json(fact: Fact) -> Any:
    """A fact of ``Case.error`` as JSON: a str or int as itself, ``{"shape": [...]}``,
    ``{"value": ...}``."""
    if isinstance(fact, Shape):
        return {"shape": list(fact.dims)}
    if isinstance(fact, Value):
        return {"value": fact.value}
    if isinstance(fact, (str, int)):
        return fact
    raise GoldenError(f"an error fact is a str, an int, a Shape or a Value, got {type(fact).__name__} {fact!r}")


def _fact_of(item: Any) -> Fact:
    if isinstance(item, Mapping) and set(item) == {"shape"}:
        return Shape(*item["shape"])
    if isinstance(item, Mapping) and set(item) == {"value"}:
        return Value(item["value"])
    return item


def _error_of(case: Case) -> dict | None:
    return None if case.error is None else {"type": case.error[0], "facts": [_fact_json(f) for f in case.error[1]]}


def _raised_outcomes(output: Any, path: str = "output") -> list[str]:
    """Where a scripted output (``ZephonDataLoader``, ``ZephonDataLoader.state``) records a
    raised error (``{"raised": ...}``)."""
    if isinstance(output, Mapping):
        if "raised" in output:
            return [f"{path}: {output['raised']}"]
        return [hit for key, value in output.items() for hit in _raised_outcomes(value, f"{path}.{key}")]
    if isinstance(output, (list, tuple)):
        return [hit for i, value in enumerate(output) for hit in _raised_outcomes(value, f"{path}[{i}]")]
    return []


def build_files(case: Case, version: str, reference: Any = None) -> dict[str, bytes]:
    """The three files of ``case`` (relative to golden/). Canon: the reference must agree with
    the hand-written expectation, else ``GoldenError``; generated: the reference's output."""
    if reference is None:
        import reference as reference_module

        reference = reference_module
    where = f"{case.generator} ({case.name})"
    call_text = f"{case.function}(golden case {case.name})"
    if case.error is not None:
        error_type = {
            "ValueError": ValueError,
            "TypeError": TypeError,
            "KeyError": KeyError,
            "RuntimeError": RuntimeError,
            "IndexError": IndexError,
        }[case.error[0]]
        try:
            assert_raises(
                error_type,
                tuple(case.error[1]),
                lambda: call(reference, case.function, case.inputs, case.options),
                clause="golden",
            )
        except AssertionError as error:
            raise GoldenError(f"canon case {where}: the reference disagrees: {error}") from None
        expected_tree, keys = None, None
    else:
        try:
            output, mutated = call(reference, case.function, case.inputs, case.options)
        except Exception as error:  # noqa: BLE001
            raise GoldenError(
                f"case {where}: the reference raised {type(error).__name__}: {error} (a call that must raise is a "
                "canon case with error=(type, facts); a scripted case records errors only when it declares "
                "expects_error=True)"
            ) from None
        if mutated:
            raise GoldenError(f"case {where}: the reference mutated its inputs: {mutated}")
        if case.expected is not None:
            try:
                compare(output, case.expected, clause="canon", call_text=call_text)
                check_keys(
                    case.function, output, list(case.keys) if case.keys else None, clause="canon", call_text=call_text
                )
            except AssertionError as error:
                raise GoldenError(
                    f"canon case {where}: the reference disagrees with the hand-written expectation, so nothing "
                    f"was written (canon is never regenerated; fix the reference or the case): {error}"
                ) from None
            expected_tree = _plain(case.expected)
            keys = list(case.keys) if case.keys else None
        else:
            raised = _raised_outcomes(output)
            if raised and not case.expects_error:
                raise GoldenError(
                    f"generated case {where}: the reference raised ({'; '.join(raised)}), but the case does not "
                    "declare expects_error=True: a generated case that silently records an error tests nothing it "
                    "claims to; fix its inputs, or declare the error it expects"
                )
            if case.expects_error and not raised:
                raise GoldenError(
                    f"generated case {where}: declares expects_error=True, but the reference raised nothing"
                )
            expected_tree = _plain(output)
            keys = list(output) if isinstance(output, Mapping) else None
    input_tensors: dict[str, torch.Tensor] = {}
    expected_tensors: dict[str, torch.Tensor] = {}
    record = {
        "case": case.name,
        "kind": case.kind,
        "function": case.function,
        "clauses": list(case.clauses),
        "capabilities": list(capabilities_of(case.function, case.options)),
        "description": case.description,
        "generator": case.generator,
        "spec_version": version,
        "options": _split(dict(case.options), "options", {}),
        "inputs": _split(dict(case.inputs), "", input_tensors),
        "expected": _split(expected_tree, "", expected_tensors),
        "keys": keys,
        "error": _error_of(case),
    }
    base = f"data/{case.name}"
    return {
        f"{base}/{RECORD}": _json_bytes(record),
        f"{base}/{INPUTS}": save_safetensors(input_tensors),
        f"{base}/{EXPECTED}": save_safetensors(expected_tensors),
    }


def _all_files(cases: list[Case] | None = None) -> dict[str, bytes]:
    version = spec_version()
    files: dict[str, bytes] = {}
    for case in cases if cases is not None else all_cases():
        files.update(build_files(case, version))
    index = {
        "spec_version": version,
        "regenerate": REGENERATE,
        "files": {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())},
    }
    files["index.json"] = (json.dumps(index, indent=1, sort_keys=True) + "\n").encode()
    return files


# -------------------------------------------------------------------- verified load ----


@dataclass(frozen=True)
class StoredCase:
    """A case as loaded from golden/data through the verified path."""

    name: str
    record: dict
    inputs: Any
    expected: Any

    @property
    def function(self) -> str:
        return self.record["function"]

    @property
    def clauses(self) -> tuple[str, ...]:
        return tuple(self.record["clauses"])

    @property
    def capabilities(self) -> tuple[str, ...]:
        return tuple(self.record["capabilities"])


def load_index(root: Path = ROOT) -> dict:
    path = root / "index.json"
    try:
        index = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise GoldenError(f"{path}: no golden index; run {REGENERATE}") from None
    except ValueError as error:
        raise GoldenError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(index, dict) or not isinstance(index.get("files"), dict):
        raise GoldenError(f"{path}: not a golden index (no 'files' mapping)")
    return index


def check_tree(root: Path, index: Mapping) -> None:
    """Every file under ``root/data`` is indexed, and every indexed file exists."""
    on_disk = {p.relative_to(root).as_posix() for p in (root / "data").rglob("*") if p.is_file() or p.is_symlink()}
    extra = sorted(on_disk - set(index["files"]))
    missing = sorted(set(index["files"]) - on_disk)
    problems = [f"golden/{p}: file is not in golden/index.json (unindexed files are rejected)" for p in extra]
    problems += [f"golden/{p}: indexed but missing" for p in missing]
    if problems:
        raise GoldenError("\n".join(problems))


def read_verified(root: Path, relpath: str, index: Mapping) -> bytes:
    """The bytes of an indexed file whose sha256 matches the index; raised before parsing."""
    if relpath not in index["files"]:
        raise GoldenError(f"golden/{relpath}: file is not in golden/index.json")
    path = root / relpath
    if path.is_symlink() or not path.is_file():
        raise GoldenError(f"golden/{relpath}: not a regular file")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != index["files"][relpath]:
        raise GoldenError(
            f"golden/{relpath}: sha256 {digest} does not match the index ({index['files'][relpath]}): the file was "
            f"modified, truncated or is stale; regenerate with {REGENERATE}"
        )
    return data


def _parse_tensors(data: bytes, relpath: str) -> dict[str, torch.Tensor]:
    try:
        return load_safetensors(data)
    except (SafetensorError, ValueError, RuntimeError) as error:
        raise GoldenError(f"golden/{relpath}: not a valid safetensors file ({error})") from None


def load_case(name: str, root: Path = ROOT, index: Mapping | None = None) -> StoredCase:
    index = load_index(root) if index is None else index
    base = f"data/{name}"
    try:
        record = json.loads(read_verified(root, f"{base}/{RECORD}", index))
    except ValueError as error:
        raise GoldenError(f"golden/{base}/{RECORD}: not valid JSON ({error})") from None
    inputs = _parse_tensors(read_verified(root, f"{base}/{INPUTS}", index), f"{base}/{INPUTS}")
    expected = _parse_tensors(read_verified(root, f"{base}/{EXPECTED}", index), f"{base}/{EXPECTED}")
    return StoredCase(
        name=name,
        record=record,
        inputs=_join(record["inputs"], inputs, f"golden/{base}/{INPUTS}"),
        expected=_join(record["expected"], expected, f"golden/{base}/{EXPECTED}"),
    )


def load_all(root: Path = ROOT) -> list[StoredCase]:
    """Every case of the index, loaded through the verified path; any unindexed, missing,
    modified or unparsable file raises ``GoldenError`` naming it."""
    index = load_index(root)
    check_tree(root, index)
    names = sorted({p.split("/")[1] for p in index["files"] if p.startswith("data/")})
    return [load_case(name, root, index) for name in names]


def run_stored_case(impl: Any, case: StoredCase) -> None:
    """Run one stored case against ``impl`` (the backend fixture); raise AssertionError with
    a message naming the case, the clause and the first mismatches."""
    __tracebackhide__ = True
    record = case.record
    clause = ",".join(case.clauses)
    call_text = f"{case.function}(golden case {case.name}: {record['description']})"
    if record["error"] is not None:
        error_type = {
            "ValueError": ValueError,
            "TypeError": TypeError,
            "KeyError": KeyError,
            "RuntimeError": RuntimeError,
            "IndexError": IndexError,
        }[record["error"]["type"]]
        assert_raises(
            error_type,
            tuple(_fact_of(f) for f in record["error"]["facts"]),
            lambda: call(impl, case.function, case.inputs, record["options"]),
            clause=clause,
        )
        return
    output, mutated = call(impl, case.function, case.inputs, record["options"])
    assert not mutated, f"inputs modified: {mutated} [{clause}: {call_text}]"
    check_keys(case.function, output, record["keys"], clause=clause, call_text=call_text)
    compare(output, case.expected, clause=clause, call_text=call_text)


# ------------------------------------------------------------------------ SPEC blocks ----

BLOCK = re.compile(r"<!-- golden:(test_[a-z0-9_]+) -->\n.*?<!-- /golden -->", re.DOTALL)


def _render_value(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            text = json.dumps(value.tolist()).replace("true", "T").replace("false", "F")
        else:
            text = json.dumps(value.tolist())
        text = text.replace(" ", "")
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype} `{text}`"
    return f"`{json.dumps(value)}`"


def render_case(case: Case) -> str:
    """The Markdown of a canon case: options, then one bullet per expected key."""
    if case.kind != "canon" or case.expected is None:
        raise GoldenError(f"SPEC.md may only render canon cases with expected values; {case.name} is not one")
    opts = ", ".join(f"{k}={json.dumps(v)}" for k, v in case.options.items())
    lines = [
        f"<!-- golden:{case.name} -->",
        f"*Rendered from golden case `{case.name}` ({case.generator}); edit the case, then run "
        f"`python -m conformance.goldens --render-spec`.* `{case.function}({opts})` →",
        "",
    ]
    for path, value in _tensors(case.inputs).items():
        lines.append(f"- input `{path}` {_render_value(value)}")
    for index, row in enumerate(case.inputs.get("rows", [])):
        lines.append(f"- input `rows.{index}.padding_length` `{json.dumps(row['padding_length'])}`")
    for key, value in case.expected.items():
        if isinstance(value, torch.Tensor) and value.dim() == 4:
            lines.append(
                f"- `{key}` {str(value.dtype).removeprefix('torch.')} {list(value.shape)}, rows per query: "
                + "; ".join(
                    "`" + " ".join("".join("1" if x else "." for x in q) for q in b[0].tolist()) + "`" for b in value
                )
            )
        else:
            lines.append(f"- `{key}` {_render_value(value)}")
    lines.append("<!-- /golden -->")
    return "\n".join(lines)


def render_spec(text: str, cases: list[Case]) -> str:
    by_name = {c.name: c for c in cases}

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in by_name:
            raise GoldenError(f"SPEC.md renders golden case {name!r}, which no golden/cases/*.py defines")
        return render_case(by_name[name])

    return BLOCK.sub(replace, text)


# ------------------------------------------------------------------------- commands ----


def regenerate(root: Path = ROOT, cases: list[Case] | None = None) -> dict[str, bytes]:
    """Write every case's files and the index; remove files no case produces. Everything is
    computed first, so a canon disagreement writes nothing."""
    files = _all_files(cases)
    data = root / "data"
    wanted = {root / p for p in files}
    if data.exists():
        for path in sorted(data.rglob("*"), reverse=True):
            if path.is_file() and path not in wanted:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    for relpath, content in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != content:
            path.write_bytes(content)
    return files


def check(root: Path = ROOT, spec_path: Path = SPEC) -> list[str]:
    """Regenerate in memory; the list of problems (empty when golden/ and SPEC.md are current)."""
    cases = all_cases()
    files = _all_files(cases)
    problems = []
    on_disk = (
        {p.relative_to(root).as_posix() for p in (root / "data").rglob("*") if p.is_file()}
        if (root / "data").exists()
        else set()
    )
    for relpath, content in files.items():
        path = root / relpath
        if not path.exists():
            problems.append(f"golden/{relpath}: missing")
        elif path.read_bytes() != content:
            problems.append(f"golden/{relpath}: differs from what {REGENERATE} generates")
    problems += [f"golden/{p}: not generated by any case and not in the index" for p in sorted(on_disk - set(files))]
    if spec_path.exists():
        text = spec_path.read_text(encoding="utf-8")
        if render_spec(text, cases) != text:
            problems.append(
                f"{spec_path.name}: golden example blocks differ from the cases; run {REGENERATE} --render-spec"
            )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="regenerate in memory and fail on any difference")
    parser.add_argument("--render-spec", action="store_true", help="rewrite SPEC.md's golden example blocks")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = check()
            if problems:
                print(f"golden check FAILED ({len(problems)} problem(s)):", *problems, sep="\n  ", file=sys.stderr)
                return 1
            cases = load_all()
            print(f"golden check passed: {len(cases)} cases, byte-identical, every file indexed and verified")
            return 0
        if args.render_spec:
            text = SPEC.read_text(encoding="utf-8")
            SPEC.write_text(render_spec(text, all_cases()), encoding="utf-8")
            print("SPEC.md golden blocks rendered")
            return 0
        files = regenerate()
        print(f"wrote {len(files) - 1} files of {(len(files) - 1) // 3} cases and golden/index.json")
        return 0
    except GoldenError as error:
        print(f"golden error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
