"""What the metamorphic properties of ``convert_text_batch`` share
(conformance/properties/test_convert_metamorphic.py, test_convert_padding_metamorphic.py):
``convert`` (the backend on drawn, in-contract rows, an exception blamed on
[ctb-input-errors]), ``assert_same_keys`` and the key sets of the routes."""

from __future__ import annotations

from batchspec.conformance.helpers.asserts import clause_failure, valid_input
from batchspec.conformance.helpers.literals import ALWAYS_KEYS, BATCHED_KEYS, METADATA_KEYS, THD_KEYS
from batchspec.conformance.helpers.literals import convert as convert_rows
from batchspec.conformance.helpers.sample_batches import describe_rows

__all__ = ["BATCHED_ROUTE_KEYS", "THD_ROUTE_KEYS", "TOKEN_KEYS", "assert_same_keys", "convert"]


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
