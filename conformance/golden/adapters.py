"""The golden adapters: how a golden case calls the target it names (``Case.function``), derived
from the records of ``conformance/run/functions.py`` (one per contract function; the run
functions are in ``conformance/golden/calls.py``): how to build its inputs and call the
backend (``run``), which backend capabilities it needs (conformance/run/backends.py), and whether
its output key order is part of the contract.

``run(impl, inputs, options)`` receives a private deep copy of the decoded inputs and returns
``(output, mutations)``: the normalized output and the input mutations the call caused
(messages, empty when none). With ``frozen_tensors`` the registry also reports any input
tensor the call modified in place (a function may replace mapping entries, never modify a
tensor in place).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from batchspec.conformance.golden.errors import GoldenError
from batchspec.conformance.helpers.storage import tensors_in
from batchspec.conformance.run.functions import (
    CONSTANTS,
    FUNCTIONS,
    ContractConstant,
    ContractFunction,
    GoldenCall,
    OptionCapability,
    Run,
)

__all__ = ["ADAPTERS", "Adapter", "OptionCapability", "adapter", "call", "capabilities_of"]


@dataclass(frozen=True)
class Adapter:
    """How golden cases call one target (a contract function, ``ZephonDataLoader.state`` or
    ``DEFAULT_PACKED_SEQUENCE_CONTRACT``): a record's ``GoldenCall`` with its capabilities and
    no-mutation clauses resolved."""

    function: str
    run: Run
    capabilities: tuple[str, ...]  # always needed: the record's profile, then the call's own needs
    option_capabilities: tuple[OptionCapability, ...] = ()  # needed with some options, in this order
    ordered_keys: bool = False  # the output's key order is part of the contract
    frozen_tensors: bool = False  # report input tensors the call modified in place
    no_mutation: tuple[str, ...] = ()  # the clauses a modified input breaks (else the case's no-mutation clauses)

    def capabilities_for(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        return self.capabilities + tuple(c.capability for c in self.option_capabilities if c.needed(options))


def _adapter(record: ContractFunction | ContractConstant, golden: GoldenCall) -> Adapter:
    own = golden.target == record.name  # a further target (ZephonDataLoader.state) is not the function itself
    return Adapter(
        golden.target,
        golden.run,
        (record.profile, *golden.needs),
        golden.option_capabilities,
        ordered_keys=golden.ordered_keys,
        frozen_tensors=golden.frozen_tensors,
        no_mutation=getattr(record, "no_mutation", ()) if own else (),
    )


# target -> adapter, from the records of conformance/run/functions.py
_RECORDS: tuple[ContractFunction | ContractConstant, ...] = (*FUNCTIONS.values(), *CONSTANTS.values())
ADAPTERS: dict[str, Adapter] = {
    golden.target: _adapter(record, golden) for record in _RECORDS for golden in record.goldens
}


def adapter(function: str) -> Adapter:
    try:
        return ADAPTERS[function]
    except KeyError:
        raise GoldenError(f"unknown golden function {function!r}; adapters exist for {sorted(ADAPTERS)}") from None


def capabilities_of(function: str, options: Mapping[str, Any]) -> tuple[str, ...]:
    """The backend capabilities (conformance/run/backends.py) a case needs."""
    return adapter(function).capabilities_for(options)


def call(impl: Any, function: str, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """Call ``function`` of ``impl`` (a backend or the ``reference`` module) on decoded
    ``inputs``; return the normalized output and a list of input mutations it caused."""
    spec = adapter(function)
    given = copy.deepcopy(dict(inputs))
    if not spec.frozen_tensors:
        return spec.run(impl, given, dict(options))
    # (the tensor object itself, a copy): a function may replace mapping entries, never modify a tensor in place
    snapshot = {k: (v, v.clone()) for k, v in tensors_in(given).items()}
    output, mutated = spec.run(impl, given, dict(options))
    mutated = mutated + [
        f"input tensor {k} was modified in place"
        for k, (v, copy_) in snapshot.items()
        if not (v.dtype == copy_.dtype and v.shape == copy_.shape and torch.equal(v, copy_))
    ]
    return output, mutated
