"""Which clause a difference in one output key of a golden case breaks.

A golden case cites every clause it pins, up to a dozen. When one key of the output differs,
only the clauses that define *that key* are broken: ``cu_seqlens`` of ``get_unpad_data`` is
[unpad-binary] or [unpad-indexed], its ``indices`` [unpad-outputs]. ``OUTPUT_CLAUSES`` maps
each function's output keys to the clauses SPEC.md gives them (section 2 for the metadata
functions, 5-8 for the others), read from the function's record (``conformance/run/functions.py``,
``output_clauses``; ``convert_text_batch`` outputs use SPEC's own field table,
``conformance/helpers/fields.py``). ``blame`` narrows those to the clauses the case cites
when some of them are cited, and falls back to the case's own clauses for a key the table
does not list (``"*"`` is every other key of a function's output).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from batchspec.conformance.run.functions import FUNCTIONS
from batchspec.conformance.run.spec import split_citation

__all__ = [
    "KEY_SET_CLAUSES",
    "OUTPUT_CLAUSES",
    "binary_mask",
    "blame",
    "cited_clauses",
    "default_collater_blame",
    "error_clauses",
    "inside_precondition",
]

# function -> output key -> the clauses that define that key's value ("*": any other key), and
# function -> the clauses its output's key set (and order) is defined by: from the records of
# conformance/run/functions.py
OUTPUT_CLAUSES: dict[str, dict[str, tuple[str, ...]]] = {
    name: dict(record.output_clauses) for name, record in FUNCTIONS.items() if record.output_clauses
}
KEY_SET_CLAUSES: dict[str, tuple[str, ...]] = {
    name: record.key_set_clauses for name, record in FUNCTIONS.items() if record.key_set_clauses
}


def _narrow(clauses: Sequence[str], cited: Sequence[str]) -> tuple[str, ...]:
    """``clauses`` that ``cited`` holds, or all of them when it holds none."""
    narrowed = tuple(c for c in clauses if c in cited)
    return narrowed or tuple(clauses)


def cited_clauses(case_clauses: Sequence[str]) -> tuple[str, ...]:
    """A case's clause ids, an enumerated item (``ctb-input-errors.4``) counted as its clause."""
    return tuple(dict.fromkeys(split_citation(c)[0] for c in case_clauses))


def binary_mask(mask: Any) -> bool:
    """Whether ``get_unpad_data`` reads ``mask`` on the binary route [unpad-binary] (a bool
    mask, or a largest value <= 1) rather than the indexed one [unpad-indexed]."""
    return isinstance(mask, torch.Tensor) and (mask.dtype == torch.bool or mask.numel() == 0 or int(mask.max()) <= 1)


def inside_precondition(mask: Any) -> bool:
    """Whether ``mask`` lies inside the order of [unpad-precondition]'s note: every value >= 0
    and, along each row with its zeros removed, no value below one before it (gaps allowed,
    ``[[1,1,3,3]]``; an interior zero allowed, ``[[1,0,1,2]]``). A bool mask always does; so
    does anything that is not a 2-D tensor (an error case)."""
    if not isinstance(mask, torch.Tensor) or mask.ndim != 2 or mask.numel() == 0 or mask.dtype == torch.bool:
        return True
    values = mask.to(torch.int64)
    if bool((values < 0).any()):
        return False
    return not bool(((values != 0) & (values < torch.cummax(values, dim=1).values)).any())


def blame(
    function: str,
    key: str,
    actual: Any,
    expected: Any,
    case_clauses: Sequence[str],
    inputs: Mapping[str, Any] | None = None,
) -> tuple[str, ...]:
    """The clauses a difference in output ``key`` of ``function`` breaks: the table's for that
    key (its ``"<key>.dtype"`` entry when only the dtype differs), narrowed to the case's
    clauses when some are among them; the case's clauses for a key the table does not list.
    ``get_unpad_data``'s spans are blamed on the route its input ``mask`` takes; the spans of
    either metadata function on [unpad-precondition] only when ``mask`` lies outside the
    precondition (``inside_precondition``): inside it, the route's own clause defines them."""
    cited = cited_clauses(case_clauses)
    table = OUTPUT_CLAUSES.get(function, {})
    dtype_only = (
        isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor) and actual.dtype != expected.dtype
    )
    clauses = (table.get(f"{key}.dtype") if dtype_only else None) or table.get(key) or table.get("*")
    metadata = ("get_unpad_data", "build_packed_sequence_metadata")
    if function in metadata and key == "cu_seqlens" and not dtype_only and inputs is not None:
        assert clauses is not None  # OUTPUT_CLAUSES gives both functions' cu_seqlens their clauses
        mask = inputs.get("mask")
        if inside_precondition(mask):
            clauses = tuple(c for c in clauses if c != "unpad-precondition")
        if function == "get_unpad_data":
            route = "unpad-binary" if binary_mask(mask) else "unpad-indexed"
            clauses = tuple(c for c in clauses if c in (route, "unpad-precondition"))
    return _narrow(clauses, cited) if clauses else cited


def error_clauses(case_clauses: Sequence[str]) -> tuple[str, ...]:
    """The clauses an error case's wrong or missing error breaks: those whose enumerated item it
    cites (``ctb-input-errors.4``: the fault it exercises), else all of its clauses."""
    items = tuple(dict.fromkeys(split_citation(c)[0] for c in case_clauses if split_citation(c)[1] is not None))
    return items or cited_clauses(case_clauses)


def default_collater_blame(key: str, actual: Any, expected: Any, items: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """For a list-valued key of ``default_collater``: [dcoll-pad-values] when every differing
    element lies past its item's own length (a pad slot), else [dcoll-fields]."""
    values = [item.get(key) for item in items]
    sequences = [v for v in values if isinstance(v, (list, tuple))]
    if not (
        isinstance(actual, torch.Tensor)
        and isinstance(expected, torch.Tensor)
        and actual.shape == expected.shape
        and actual.dtype == expected.dtype
        and actual.dim() == 2
        and len(sequences) == len(values)
    ):
        return ("dcoll-fields",)
    lengths = torch.tensor([len(v) for v in sequences]).unsqueeze(1)
    pad_slot = torch.arange(expected.shape[1]).unsqueeze(0) >= lengths
    differ = actual != expected
    return ("dcoll-pad-values",) if bool(pad_slot[differ].all()) else ("dcoll-fields",)
