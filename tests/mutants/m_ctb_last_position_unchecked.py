"""negative positions are looked for in position_ids (positions[:S]) only: a negative last position passes. Breaks: [ctb-input-errors]"""

import numpy as np
import torch
from mutant_base import converting, reference_with
from zephon import SampleBatch, SampleRecord


def _check_position_ids_only(call):
    # a backend that validates positions after slicing them to position_ids: the dropped last
    # entry only matters as a segment-start target (== 0), so a negative one is read as "not 0"
    batch = call["sample_batch"]
    records = getattr(batch, "records", None)
    if not records:
        return
    rebuilt = []
    for record in records:
        payload = getattr(record, "payload", None)
        positions = payload.get("positions") if isinstance(payload, dict) else None
        if positions is not None and not isinstance(positions, str):
            values = positions.tolist() if isinstance(positions, (np.ndarray, torch.Tensor)) else list(positions)
            last = values[-1] if values and not isinstance(values[-1], list) else None
            if isinstance(last, int) and not isinstance(last, bool) and -(2**63) <= last < 0:
                values[-1] = 1  # nonzero: the same segment-start masking as the negative entry
                record = SampleRecord(meta=record.meta, payload={**payload, "positions": values})
        rebuilt.append(record)
    call["sample_batch"] = SampleBatch(records=tuple(rebuilt))


BACKEND = reference_with(
    "m-ctb-last-position-unchecked", convert_text_batch=converting(before=_check_position_ids_only)
)
