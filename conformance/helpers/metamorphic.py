"""What the metamorphic properties of ``convert_text_batch`` share
(conformance/properties/test_convert_metamorphic.py, test_convert_padding_metamorphic.py):
``convert`` (the backend on drawn, in-contract rows, an exception blamed on
[ctb-input-errors]), ``assert_same_keys``, ``grown_table`` (a span table grown by the longer rows)
and the key sets of the routes."""

from __future__ import annotations

import torch

from batchspec.conformance.helpers.asserts import clause_failure, valid_input
from batchspec.conformance.helpers.literals import ALWAYS_KEYS, BATCHED_KEYS, METADATA_KEYS, THD_KEYS
from batchspec.conformance.helpers.literals import convert as convert_rows
from batchspec.conformance.helpers.sample_batches import describe_rows

__all__ = ["BATCHED_ROUTE_KEYS", "THD_ROUTE_KEYS", "TOKEN_KEYS", "assert_same_keys", "convert", "grown_table"]


def convert(backend, rows, *args, **options):
    """``convert_text_batch`` on drawn, in-contract ``rows``: a ``ValueError`` or ``TypeError``
    is blamed on [ctb-input-errors] (``valid_input``)."""
    __tracebackhide__ = True
    with valid_input(f"convert_text_batch(sample_batch({describe_rows(rows)}), {options})"):
        return convert_rows(backend, rows, *args, **options)


TOKEN_KEYS = ALWAYS_KEYS
BATCHED_ROUTE_KEYS = frozenset((*BATCHED_KEYS, *METADATA_KEYS)) - set(ALWAYS_KEYS)
THD_ROUTE_KEYS = frozenset(THD_KEYS) - set(ALWAYS_KEYS)


def assert_same_keys(first, second, *, drop_first=frozenset(), drop_second=frozenset(), clause: str, call: str):
    """``first`` and ``second`` hold the same keys once each one's route keys are set aside."""
    __tracebackhide__ = True
    left, right = set(first) - drop_first, set(second) - drop_second
    if left != right:
        raise clause_failure(
            f"keys {sorted(left)} (first call), but should be {sorted(right)} as in the second call",
            clause=clause,
            call=call,
        )


def grown_table(
    table: torch.Tensor, fill: int, changes: dict[int, tuple[str, int]], *, name: str, clause: str, call: str
) -> torch.Tensor:
    """``table``'s rows as lists of valid (``!= fill``) entries, changed per row: ``("add", x)``
    adds ``x`` to the last entry, ``("append", x)`` appends ``x``; then padded with ``fill`` to
    the longest row (the width of ``cu_seqlens`` and of THD lengths for contiguous ids).

    Raises:
        ClauseFailure: blamed on ``clause``, when a row to ``add`` to holds no valid entry: the
            backend's own ``name`` (of the shorter rows) lost the row's last span, which every
            row with a real input token has.
    """
    rows = [[v for v in row if v != fill] for row in table.tolist()]
    for b, (how, value) in changes.items():
        if how == "add":
            if not rows[b]:
                raise clause_failure(
                    f"{name}[{b}] of the shorter rows holds no valid entry (every one is {fill}), but row {b} has "
                    f"a real input token: its last span is missing",
                    clause=clause,
                    call=call,
                )
            rows[b][-1] += value
        else:
            rows[b].append(value)
    width = max(len(row) for row in rows)
    return torch.tensor([row + [fill] * (width - len(row)) for row in rows], dtype=table.dtype)
