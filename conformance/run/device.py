"""Running the tensor functions' checks on an accelerator: ``pytest conformance --device=cuda[:N]``.

The conformance tests build their inputs on the CPU and compare results on the CPU. With
``--device`` other than ``cpu``, ``Backend.__getattr__`` hands the tests, for the tensor
functions of ``PLACED_FUNCTIONS`` (the records of ``conformance/run/functions.py`` whose
``device`` is set), ``placed(fn, name, device)``: a wrapper that runs the backend's function on
the device and checks [tb-device] on what it returns, while the unchanged tests see what they
would see on the CPU. A call through it:

1. moves the inputs to the device (explicit copies, ``.to(device, copy=True)``): every tensor
   argument, every tensor value of a mapping argument (shallow: a new ``dict`` with the same
   keys), and, for a ``zephon.SampleBatch`` argument, every tensor payload value
   (``sample_batch_to``: a new batch of new records sharing each record's ``meta``; lists and
   numpy arrays stay as they are, so a batch of lists reaches the backend as it is). Other
   arguments pass unchanged;
2. calls the backend's function; an exception it raises propagates unchanged (its type and
   message are what the tests check);
3. checks [tb-device] (``device_problems``): every tensor returned (the value itself, a tuple's
   items or a mapping's values) is on ``input_device`` of the arguments the backend received:
   for a function placed ``BY_TOKEN_FIELDS`` (``convert_text_batch``) the one device of the
   records' token fields when every record's token field (the first of ``input_ids``,
   ``tokens``, ``token_ids``, ``ids`` in its payload) is a tensor and all of them are on one
   device, else the CPU (lists, numpy arrays, tensors on several devices); for one placed
   ``BY_TENSORS`` the one device of the tensors it received (the device moved to), the CPU when
   it received none. A tensor elsewhere is a
   ``ClauseFailure`` blamed on [tb-device];
4. gives the caller the result where it would be without the wrapper: every returned tensor is
   moved to ``input_device`` of the caller's own arguments (the CPU for the suite's CPU inputs;
   a test that builds its inputs on an accelerator itself gets its results there), a returned
   tensor that is one the wrapper passed in is the caller's own object, and in-place effects
   are mirrored: a moved input tensor whose values changed is copied back into the caller's
   tensor (so the tests' own no-mutation checks still catch a backend that writes to its
   inputs), and a mapping argument, or a record's payload, that the function changed (entries
   added, replaced or removed) is changed the same way in the caller's mapping. When the
   function returns the mapping it was given (``adapt_model_inputs``,
   ``enable_xdoc_attention``, ``convert_batch_output``), the caller gets its own mapping back,
   so ``result is batch`` holds. Values that are not tensors (``max_seqlen``, ``qkv_format``)
   pass through.

Limits:

* [tb-no-aliasing] is checked by the CPU run: moving results off the device copies them, so
  storage shared between outputs, or between an output and an input, on the device cannot be
  seen by the tests.
* ``Datum``, ``collate_datums``, the collaters and ``ZephonDataLoader`` are not wrapped: their
  token fields are CPU tensors by contract ([tb-device]); a loader given a wrapped
  ``convert_text_batch`` calls it on Zephon's list payloads, which stay on the CPU.
* The multi-rank scenarios' rank processes load the backend themselves, without ``--device``:
  they always run on the CPU.
* Only a returned tensor, tuple or mapping is looked into, one level deep.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
from collections.abc import Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import torch
from zephon import SampleBatch

from batchspec.conformance.helpers.asserts import clause_failure
from batchspec.conformance.helpers.sample_batches import TOKEN_FIELDS
from batchspec.conformance.run.functions import BY_TOKEN_FIELDS, FUNCTIONS, placed_functions

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    class _PayloadRecord(DataclassInstance, Protocol):
        payload: Mapping[str, Any]


__all__ = [
    "PLACED_FUNCTIONS",
    "DeviceOptionError",
    "check_device_option",
    "device_problems",
    "input_device",
    "placed",
    "sample_batch_to",
]

# The contract's tensor functions whose inputs --device moves (their records' ``device``).
PLACED_FUNCTIONS = frozenset(placed_functions())

DEVICE_FORMS = "cpu, cuda or cuda:N (N a CUDA device index from 0)"
_DEVICE_OPTION = re.compile(r"cpu|cuda(?::(\d+))?")


class DeviceOptionError(ValueError):
    """A ``--device`` value this machine cannot run the suite on."""


def check_device_option(value: str) -> str:
    """``--device``'s value, validated: ``cpu``, ``cuda`` or ``cuda:N`` (returned as given,
    ``cuda:N`` with N written without leading zeros).

    Raises:
        DeviceOptionError: another form (the message names the value and the accepted forms),
            ``cuda``/``cuda:N`` where ``torch.cuda.is_available()`` is False (CUDA is not
            available on this machine), or ``cuda:N`` with N >= ``torch.cuda.device_count()``.
    """
    match = _DEVICE_OPTION.fullmatch(value)
    if match is None:
        raise DeviceOptionError(f"--device={value!r}: not a device the suite can run on; use {DEVICE_FORMS}")
    if value == "cpu":
        return value
    if not torch.cuda.is_available():
        raise DeviceOptionError(
            f"--device={value!r}: CUDA is not available on this machine (torch {torch.__version__}: "
            "torch.cuda.is_available() is False); run with --device=cpu (the default)"
        )
    if match.group(1) is None:
        return value
    index, count = int(match.group(1)), torch.cuda.device_count()
    if index >= count:
        raise DeviceOptionError(
            f"--device={value!r}: this machine has {count} CUDA device(s) (cuda:0 to cuda:{count - 1}); "
            f"use {DEVICE_FORMS}"
        )
    return f"cuda:{index}"


def _resolved(device: str | torch.device) -> torch.device:
    """``device`` with its index: ``cuda`` is the current CUDA device (as tensors report it)."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def _token_field(payload: Any) -> Any:
    if isinstance(payload, Mapping):
        for name in TOKEN_FIELDS:
            if name in payload:
                return payload[name]
    return None


def _sample_batches(args: tuple, kwargs: Mapping[str, Any]) -> list[SampleBatch]:
    return [value for value in (*args, *kwargs.values()) if isinstance(value, SampleBatch)]


def _tensors(args: tuple, kwargs: Mapping[str, Any]) -> list[torch.Tensor]:
    """The tensor arguments and the tensor values of mapping arguments (one level deep)."""
    found = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, Mapping):
            found.extend(item for item in value.values() if isinstance(item, torch.Tensor))
    return found


def input_device(name: str, args: tuple, kwargs: Mapping[str, Any]) -> torch.device:
    """Where [tb-device] puts the tensors ``name(*args, **kwargs)`` returns, by ``name``'s record
    (``conformance/run/functions.py``, ``device``).

    ``BY_TOKEN_FIELDS`` (``convert_text_batch``): the device of the records' token fields when
    every record's token field is a tensor and all of them are on one device; else the CPU.
    ``BY_TENSORS`` (the other functions): the one device of the tensors they receive (tensor
    arguments and tensor values of mapping arguments); the CPU when they receive none, or
    tensors on several devices."""
    function = FUNCTIONS.get(name)
    if function is not None and function.device == BY_TOKEN_FIELDS:
        batches = _sample_batches(args, kwargs)
        records = getattr(batches[0], "records", ()) if batches else ()
        fields = [_token_field(getattr(record, "payload", None)) for record in records]
        devices = {field.device for field in fields if isinstance(field, torch.Tensor)}
        if fields and len(devices) == 1 and all(isinstance(field, torch.Tensor) for field in fields):
            return devices.pop()
        return torch.device("cpu")
    devices = {tensor.device for tensor in _tensors(args, kwargs)}
    return devices.pop() if len(devices) == 1 else torch.device("cpu")


def device_problems(result: Any, expected_device: str | torch.device) -> list[str]:
    """Each tensor in ``result`` (a tensor, a tuple's items, a mapping's values) that is not on
    ``expected_device``, as ``"key 'name' is on X, expected Y"`` (``"item 1 ..."`` for a tuple,
    ``"the returned tensor ..."`` for a tensor); empty when all are on it. ``cuda`` without an
    index means the current CUDA device."""
    want = _resolved(expected_device)
    if isinstance(result, torch.Tensor):
        named: list[tuple[str, Any]] = [("the returned tensor", result)]
    elif isinstance(result, tuple):
        named = [(f"item {index}", value) for index, value in enumerate(result)]
    elif isinstance(result, Mapping):
        named = [(f"key {key!r}", value) for key, value in result.items()]
    else:
        named = []
    return [
        f"{what} is on {value.device}, expected {want}"
        for what, value in named
        if isinstance(value, torch.Tensor) and value.device != want
    ]


def _payload_record(record: object) -> TypeGuard[_PayloadRecord]:
    """A dataclass whose ``payload`` is a mapping: a record ``_Placement.sample_batch`` rebuilds
    (``dataclasses.replace``, which refuses a dataclass that is a class, not an instance)."""
    return dataclasses.is_dataclass(record) and isinstance(getattr(record, "payload", None), Mapping)


class _Placement:
    """The inputs of one call moved to a device, and what is needed to undo it for the caller."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.tensors: list[tuple[torch.Tensor, torch.Tensor]] = []  # (caller's, moved)
        self.originals: dict[int, torch.Tensor] = {}  # id(moved) -> caller's
        # (caller's mapping, the dict passed, its entries as passed) for mapping arguments, and
        # (caller's payload, the record passed, its payload's entries as passed) for payloads
        self.mappings: list[tuple[Mapping, dict, dict]] = []
        self.payloads: list[tuple[Mapping, Any, dict]] = []

    def tensor(self, tensor: torch.Tensor) -> torch.Tensor:
        moved = tensor.to(self.device, copy=True)
        self.tensors.append((tensor, moved))
        self.originals[id(moved)] = tensor
        return moved

    def entries(self, mapping: Mapping) -> dict:
        return {key: self.tensor(v) if isinstance(v, torch.Tensor) else v for key, v in mapping.items()}

    def mapping(self, mapping: Mapping) -> dict:
        passed = self.entries(mapping)
        self.mappings.append((mapping, passed, dict(passed)))
        return passed

    def sample_batch(self, batch: SampleBatch) -> SampleBatch:
        """``batch`` with its tensor payload values moved (``batch`` itself when it holds none,
        or when it cannot be rebuilt: a malformed batch reaches the backend as it is)."""
        records, payloads = [], []
        try:
            if not any(
                isinstance(payload, Mapping) and any(isinstance(v, torch.Tensor) for v in payload.values())
                for payload in (getattr(record, "payload", None) for record in batch.records)
            ):
                return batch
            for record in batch.records:
                if not _payload_record(record):
                    records.append(record)
                    continue
                copy = dataclasses.replace(record, payload=self.entries(record.payload))
                records.append(copy)
                payloads.append((record.payload, copy, dict(copy.payload)))
            moved = dataclasses.replace(batch, records=type(batch.records)(records))
        except Exception:  # a malformed batch: the backend's own checks are under test
            return batch
        self.payloads.extend(payloads)
        return moved

    def argument(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, SampleBatch):
            return self.sample_batch(value)
        if isinstance(value, Mapping):
            return self.mapping(value)
        return value

    def mirror_tensors(self) -> None:
        """Copy each moved input whose values changed back into the caller's tensor."""
        for original, moved in self.tensors:
            try:
                back = moved.to(original.device)
                if back.shape == original.shape and torch.equal(back, original):
                    continue
                with torch.no_grad():
                    if back.shape != original.shape:
                        original.resize_(back.shape)
                    original.copy_(back)
            except RuntimeError:  # a change the caller's tensor cannot take (e.g. a view resized)
                continue

    def restore(self, value: Any, device: torch.device) -> Any:
        """A returned value as the caller gets it: a tensor passed in is the caller's own, any
        other tensor is moved to ``device``."""
        if not isinstance(value, torch.Tensor):
            return value
        original = self.originals.get(id(value))
        if original is not None and original is not value:
            return original
        return value.to(device)

    def mirror_mappings(self, device: torch.device) -> None:
        """Make each caller's mapping (and payload) hold what the one passed holds now."""
        states = [(caller, passed, before) for caller, passed, before in self.mappings]
        states += [(caller, record.payload, before) for caller, record, before in self.payloads]
        for caller, now, before in states:
            if not isinstance(now, Mapping):
                continue
            removed = [key for key in caller if key not in now]
            changed = {
                key: self.restore(value, device)
                for key, value in now.items()
                if key not in before or value is not before[key]
            }
            if (removed or changed) and isinstance(caller, MutableMapping):
                for key in removed:
                    del caller[key]
                caller.update(changed)

    def mirror(self, device: torch.device) -> None:
        """Mirror the call's in-place effects on the caller's tensors, mappings and payloads."""
        self.mirror_tensors()
        self.mirror_mappings(device)

    def result(self, result: Any, device: torch.device) -> Any:
        """``result`` as the caller gets it: its tensors on ``device``; the caller's own mapping
        when ``result`` is the mapping the call was given."""
        for caller, passed, _ in self.mappings:
            if result is passed:
                if isinstance(caller, MutableMapping):
                    return caller
                return {key: self.restore(value, device) for key, value in passed.items()}
        if isinstance(result, torch.Tensor):
            return self.restore(result, device)
        if isinstance(result, tuple):
            items = [self.restore(value, device) for value in result]
            return tuple(items) if type(result) is tuple else type(result)(*items)
        if isinstance(result, MutableMapping):
            for key, value in list(result.items()):
                if isinstance(value, torch.Tensor):
                    result[key] = self.restore(value, device)
            return result
        if isinstance(result, Mapping):
            return {key: self.restore(value, device) for key, value in result.items()}
        return result


def sample_batch_to(batch: SampleBatch, device: str | torch.device) -> SampleBatch:
    """A copy of ``batch`` whose records are new records (same ``meta``, a new payload dict)
    with every tensor payload value copied to ``device``; lists and numpy arrays are shared,
    ``batch`` is untouched. A batch with no tensor payload value is returned as it is."""
    return _Placement(torch.device(device)).sample_batch(batch)


def placed(fn: Callable, name: str, device: str | torch.device) -> Callable:
    """``fn`` (the backend's ``name``) run on ``device`` with its [tb-device] checked; see the
    module docstring. Works for ``device="cpu"`` too: the inputs are still copied, so every
    step but the transfer itself is the same as on an accelerator."""
    target = _resolved(device)

    @functools.wraps(fn)
    def call_placed(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        home = input_device(name, args, kwargs)  # where the caller gets the results
        placement = _Placement(target)
        moved_args = tuple(placement.argument(value) for value in args)
        moved_kwargs = {key: placement.argument(value) for key, value in kwargs.items()}
        expected = input_device(name, moved_args, moved_kwargs)
        try:
            result = fn(*moved_args, **moved_kwargs)
        except BaseException:
            with contextlib.suppress(Exception):  # the backend's own exception is what the test checks
                placement.mirror(home)
            raise
        placement.mirror(home)
        problems = device_problems(result, expected)
        if problems:
            raise clause_failure(
                f"{name} returned tensors off the device of its inputs (the suite ran it with its inputs on "
                f"{target}, --device)",
                clause="tb-device",
                details=f": {'; '.join(problems)}",
            )
        return placement.result(result, home)

    return call_placed
