"""numpy payload arrays are read through astype(int64): uint64 values beyond int64 wrap instead of raising. Breaks: [ctb-input-errors]"""

import numpy as np
from mutant_base import converting, reference_with
from zephon import SampleBatch, SampleRecord


def _read_as_int64(call):
    # the realistic shortcut: np.asarray(field).astype(np.int64) before the range check, which
    # silently wraps 2**63 .. 2**64 - 1 to negative values (on new records: the input is not modified)
    batch = call["sample_batch"]
    records = getattr(batch, "records", None)
    if not records:
        return
    rebuilt = []
    for record in records:
        payload = getattr(record, "payload", None)
        if isinstance(payload, dict) and any(
            isinstance(v, np.ndarray) and v.dtype == np.uint64 for v in payload.values()
        ):
            payload = {
                k: v.astype(np.int64) if isinstance(v, np.ndarray) and v.dtype == np.uint64 else v
                for k, v in payload.items()
            }
            record = SampleRecord(meta=record.meta, payload=payload)
        rebuilt.append(record)
    call["sample_batch"] = SampleBatch(records=tuple(rebuilt))


BACKEND = reference_with("m-ctb-numpy-uint64-wraps", convert_text_batch=converting(before=_read_as_int64))
