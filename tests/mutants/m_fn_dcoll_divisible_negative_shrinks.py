"""the collaters' width is upstream's `ceil(L / d) * d` for a negative d too. Breaks: [dcoll-fields], [collate-padded], [collate-errors]

L = 3, d = -2 gives 2 (the old behaviour of default_collater and collate_datums). Every multiple
of -2 is a multiple of 2, so the width must be the smallest one at least the longest length, 4;
here it is below the longest row, whose tensor then cannot be built (torch's ValueError: raising
on a valid input breaks [collate-errors] too, SPEC's "Raising on a valid input").
"""

import functools
import math

from mutant_base import reference, reference_with

from batchspec.reference import collaters

_right_pad = collaters._right_pad


def _signed_ceil_pad(rows, pad, pad_seq_len_divisible=None):
    d = pad_seq_len_divisible
    if not (type(d) is int and d < 0):
        return _right_pad(rows, pad, d)
    width = math.ceil(max(len(row) for row in rows) / d) * d  # the one changed line: d, not abs(d)
    if pad is None:
        pad = rows[0][-1]
    return [row + [pad] * (width - len(row)) for row in rows]


def _patched(function):
    @functools.wraps(function)  # the reference's signature, keyword-only parameters included
    def call(*args, **kwargs):
        collaters._right_pad = _signed_ceil_pad
        try:
            return function(*args, **kwargs)
        finally:
            collaters._right_pad = _right_pad

    return call


BACKEND = reference_with(
    "m-fn-dcoll-divisible-negative-shrinks",
    default_collater=_patched(reference.default_collater),
    collate_datums=_patched(reference.collate_datums),
)
