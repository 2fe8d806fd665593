"""The inputs of stored golden cases (``golden/data``, read through the verified path of
``batchspec.conformance.tools.goldens``), for the conformance checks that need a golden case's input on a
live object: aliasing, in-place mutation, identity, device placement, the type of a returned
value. The input is defined once, in the case (``golden/cases/*.py``); these checks reuse it
instead of restating it.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from batchspec.conformance.golden.verified_read import load_case
from batchspec.conformance.helpers.sample_batches import Row

__all__ = ["EXAMPLE", "stored_expected", "stored_inputs", "stored_options", "stored_rows"]

EXAMPLE = "test_example_a_defaults"  # the shared packed batch of SPEC.md's worked examples A-G


@functools.cache
def _case(name: str) -> Any:
    return load_case(name)


def stored_inputs(name: str) -> Any:
    """A private copy of golden case ``name``'s decoded inputs (tensors, mappings, lists)."""
    return copy.deepcopy(_case(name).inputs)


def stored_expected(name: str) -> Any:
    """A private copy of golden case ``name``'s expected output."""
    return copy.deepcopy(_case(name).expected)


def stored_options(name: str) -> dict:
    """A private copy of golden case ``name``'s options."""
    return copy.deepcopy(_case(name).record["options"])


def stored_rows(name: str = EXAMPLE) -> list[Row]:
    """The ``convert_text_batch`` rows of golden case ``name`` (``batchspec.conformance.golden.api.text_batch_inputs``
    inputs) as ``Row``s; record options (field names, tags, extra payloads) are not kept."""
    return [
        Row(
            tuple(r["tokens"].tolist()),
            None if r["positions"] is None else tuple(r["positions"].tolist()),
            r["padding_length"],
        )
        for r in _case(name).inputs["rows"]
    ]
