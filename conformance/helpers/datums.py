"""Drawn ``Datum`` cases (``datum_cases``) and the ``collate_datums`` output SPEC gives them
(``expected_collation``), computed in plain Python from the drawn values (SPEC.md, "``Datum``
and the canonical collaters"). Used by conformance/test_datum.py's invariants and
conformance/test_layouts.py.

A case is 1..``MAX_DATUMS`` datums of 0..``MAX_DATUM_LEN`` tokens sharing one key set, each
field handed to ``Datum`` as a list or a tensor of any integer dtype (``TOKEN_DTYPES``: the
narrow ones are the corners, the collated fields are int64), side inputs exactly
representable in float32, an ``ignore_index`` and a ``pad_seq_len_divisible``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from hypothesis import strategies as st

from batchspec.conformance.helpers.literals import IGNORE_INDEX, bools, f32, long

__all__ = ["MAX_DATUMS", "MAX_DATUM_LEN", "TOKEN_DTYPES", "DatumCase", "datum_cases", "expected_collation"]

X = IGNORE_INDEX

MAX_DATUMS = 4
MAX_DATUM_LEN = 8
# Token ids 0..9: real tokens often equal the pad id (0) and the ignore_index values 0 and 7.
TOKENS = st.integers(0, 9)
# Tensor dtypes of input_ids / target_tokens: a tensor is kept as given [datum-construct], and
# any integer dtype holds 0..9 (the narrow ones are the corners: the collated fields are int64).
TOKEN_DTYPES = {
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
}
TOKEN_FORMS = ("list", "int64", "int64", "int32", "int16", "int8", "uint8")
# Exactly representable in float32, so side inputs compare exactly.
FLOATS = st.integers(-16, 16).map(lambda k: k / 4)
IGNORE_INDICES = (X, -1, 0, 7)


class DatumCase(NamedTuple):
    """Drawn datums as plain Python values, with how each field is handed to ``Datum``."""

    ids: list[list[int]]
    lfi: list[dict[str, Any]]  # plain Python values: lists of ints/floats or scalars
    ids_form: str  # "list", or a tensor dtype of TOKEN_DTYPES
    targets_form: str  # "list", or a tensor dtype of TOKEN_DTYPES
    ignore_index: int
    divisible: int | None

    def build(self, backend) -> list:
        """Fresh ``Datum`` objects for this case."""
        dtype = TOKEN_DTYPES
        datums = []
        for ids, lfi in zip(self.ids, self.lfi):
            values = dict(lfi)
            if self.targets_form != "list" and "target_tokens" in values:
                values["target_tokens"] = torch.tensor(values["target_tokens"], dtype=dtype[self.targets_form])
            given = ids if self.ids_form == "list" else torch.tensor(ids, dtype=dtype[self.ids_form])
            datums.append(backend.Datum(given, values))
        return datums

    def describe(self, **options) -> str:
        rows = ", ".join(f"Datum({ids}, {lfi})" for ids, lfi in zip(self.ids, self.lfi))
        opts = ", ".join(f"{k}={v!r}" for k, v in options.items())
        return (
            f"collate_datums([{rows}], {opts}) with input_ids as {self.ids_form}, target_tokens as {self.targets_form}"
        )


@st.composite
def datum_cases(draw, min_len: int = 0) -> DatumCase:
    """1..MAX_DATUMS datums of 0..MAX_DATUM_LEN tokens (min_len at least) with one shared key set.

    ``weights`` is per-token (ints or floats, many zeros, some negative; or bools, a loss mask
    whose ``False`` is 0) or a scalar for every datum;
    ``logprobs`` is per-token; ``advantages`` is per-token, a length-1 list or a scalar.
    """
    n = draw(st.integers(1, MAX_DATUMS), label="num_datums")
    lengths = [draw(st.integers(min_len, MAX_DATUM_LEN), label=f"len{b}") for b in range(n)]
    ids = [draw(st.lists(TOKENS, min_size=t, max_size=t), label=f"ids{b}") for b, t in enumerate(lengths)]
    has_targets = draw(st.booleans(), label="has_targets")
    weights_form = draw(st.sampled_from(("none", "int", "float", "bool", "scalar")), label="weights")
    has_logprobs = draw(st.booleans(), label="has_logprobs")
    advantages_form = draw(st.sampled_from(("none", "token", "list1", "scalar")), label="advantages")
    # zeros often (they mask the label), negative weights too (they do not: only == 0 masks)
    weight_values = {
        "int": st.sampled_from((0, 0, 1, 2, -1)),
        "float": st.sampled_from((0.0, 0.0, 0.5, 1.0, -0.5)),
        "bool": st.sampled_from((False, True, True)),
        "scalar": st.sampled_from((0, 1, 0.0, 0.5, -1, -0.25)),
    }
    lfi: list[dict[str, Any]] = []
    for t in lengths:
        values: dict[str, Any] = {}
        if has_targets:
            values["target_tokens"] = draw(st.lists(TOKENS, min_size=t, max_size=t))
        if weights_form in ("int", "float", "bool"):
            values["weights"] = draw(st.lists(weight_values[weights_form], min_size=t, max_size=t))
        elif weights_form == "scalar":
            values["weights"] = draw(weight_values["scalar"])
        if has_logprobs:
            values["logprobs"] = draw(st.lists(FLOATS, min_size=t, max_size=t))
        if advantages_form == "token":
            values["advantages"] = draw(st.lists(FLOATS, min_size=t, max_size=t))
        elif advantages_form == "list1":
            values["advantages"] = [draw(FLOATS)]
        elif advantages_form == "scalar":
            values["advantages"] = draw(FLOATS)
        lfi.append(values)
    ignore_index = draw(st.sampled_from(IGNORE_INDICES), label="ignore_index")
    # target_tokens of a dtype that holds ignore_index only: SPEC does not say what a masked
    # label becomes when its tensor's dtype cannot hold ignore_index (-100 in uint8)
    holding = [form for form in TOKEN_FORMS if form == "list" or _holds(TOKEN_DTYPES[form], ignore_index)]
    return DatumCase(
        ids=ids,
        lfi=lfi,
        ids_form=draw(st.sampled_from(TOKEN_FORMS), label="ids_form"),
        targets_form=draw(st.sampled_from(holding), label="targets_form"),
        ignore_index=ignore_index,
        divisible=draw(st.sampled_from((None, None, 1, 2, 3, 4, 8, -2)), label="pad_seq_len_divisible"),
    )


def _holds(dtype: torch.dtype, value: int) -> bool:
    info = torch.iinfo(dtype)
    return info.min <= value <= info.max


def _flat(value) -> list[float]:
    return [float(v) for v in value] if isinstance(value, list) else [float(value)]


def _labels(case: DatumCase, b: int, ignore_index: int) -> list[int]:
    """Datum b's labels: its targets with ignore_index where weights == 0 (scalars broadcast)."""
    lfi, t = case.lfi[b], len(case.ids[b])
    if "target_tokens" not in lfi:
        return [ignore_index] * t
    weights = lfi.get("weights")
    if weights is None:
        return list(lfi["target_tokens"])
    w = weights if isinstance(weights, list) else [weights] * t
    return [ignore_index if wi == 0 else ti for ti, wi in zip(lfi["target_tokens"], w)]


def expected_collation(case: DatumCase, *, packed: bool) -> dict[str, Any]:
    """The whole ``collate_datums`` output for ``case``, in key order, from the SPEC's collate_datums rules."""
    lengths = [len(x) for x in case.ids]
    n, ii = len(lengths), case.ignore_index
    has_targets = "target_tokens" in case.lfi[0]
    out: dict[str, Any] = {}
    if packed:
        out["input_ids"] = long([[tok for row in case.ids for tok in row]])
        out["labels"] = long([[lab for b in range(n) for lab in _labels(case, b, ii)]])
        out["position_ids"] = long([[p for t in lengths for p in range(t)]])
        out["seq_lens"] = long([lengths])
        out["seq_lens_padded"] = long([lengths])
        out["qkv_format"] = "thd"
    else:
        width = max(lengths)
        if case.divisible:  # a multiple of its absolute value when negative [collate-padded]
            width = -(-width // abs(case.divisible)) * abs(case.divisible)
        out["input_ids"] = long([row + [0] * (width - len(row)) for row in case.ids]).reshape(n, width)
        attention = [[1] * t + [0] * (width - t) for t in lengths]
        out["attention_mask"] = long(attention).reshape(n, width)
        if has_targets:
            out["labels"] = long([_labels(case, b, ii) + [X] * (width - lengths[b]) for b in range(n)]).reshape(
                n, width
            )
        out["padding_mask"] = bools([[a == 0 for a in row] for row in attention]).reshape(n, width)
    for key in sorted(set(case.lfi[0]) - {"target_tokens"}):
        rows = [_flat(lfi[key]) for lfi in case.lfi]
        if all(len(r) == t for r, t in zip(rows, lengths)):
            if packed:
                out[key] = f32([[v for r in rows for v in r]])
            else:
                out[key] = f32([r + [0.0] * (width - len(r)) for r in rows]).reshape(n, width)
        else:
            out[key] = f32([r[0] for r in rows])
    return out
