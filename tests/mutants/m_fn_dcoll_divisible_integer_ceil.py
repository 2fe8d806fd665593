"""default_collater rounds the width up as `(width + d - 1) // d * d`: d = -1 gives width - 2. Breaks: [dcoll-fields]

The integer ceiling is right for d >= 1. Every length is a multiple of -1, so the width must stay
the longest; here shorter rows are left unpadded and the batch is ragged.
"""

from mutant_base import reference, reference_with

from batchspec.reference import collaters

_right_pad = collaters._right_pad


def _integer_ceil_pad(rows, pad, pad_seq_len_divisible=None):
    d = pad_seq_len_divisible
    if not (type(d) is int and d):
        return _right_pad(rows, pad, d)
    width = (max(len(row) for row in rows) + d - 1) // d * d  # the one changed line: math.ceil(width / d) * d
    if pad is None:
        pad = rows[0][-1]
    return [row + [pad] * (width - len(row)) for row in rows]


def default_collater(batch, pad_seq_len_divisible=None):
    collaters._right_pad = _integer_ceil_pad
    try:
        return reference.default_collater(batch, pad_seq_len_divisible)
    finally:
        collaters._right_pad = _right_pad


BACKEND = reference_with("m-fn-dcoll-divisible-integer-ceil", default_collater=default_collater)
