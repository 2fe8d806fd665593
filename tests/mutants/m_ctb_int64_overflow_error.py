"""a token or position outside int64 raises OverflowError, not ValueError. Breaks: [ctb-input-errors]"""

from mutant_base import converting, reference, reference_with

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _overflow_error(call):
    for record in getattr(call["sample_batch"], "records", None) or ():
        payload = getattr(record, "payload", None) or {}
        for name in (*reference.TOKEN_FIELD_CANDIDATES, "positions"):
            values = payload.get(name)
            if isinstance(values, (list, tuple)):
                for x in values:
                    if isinstance(x, int) and not isinstance(x, bool) and not INT64_MIN <= x <= INT64_MAX:
                        raise OverflowError("Python int too large to convert to C long")


BACKEND = reference_with("m-ctb-int64-overflow-error", convert_text_batch=converting(before=_overflow_error))
