"""convert_text_batch reads a tensor token field's first L storage elements, ignoring offset and stride. Breaks: [tb-layout]

Right for contiguous token fields at storage offset 0 (and for lists and numpy arrays).
"""

import torch
from mutant_base import converting, reference, reference_with
from zephon import SampleBatch, SampleRecord


def _storage_front(field: torch.Tensor) -> torch.Tensor:
    """The first ``len(field)`` elements of the field's storage, read contiguously (fewer when the
    storage is shorter, as for an expanded field)."""
    flat = torch.empty(0, dtype=field.dtype, device=field.device).set_(field.untyped_storage())
    return flat[: field.shape[0]]


def _read_storage(call):
    records = getattr(call["sample_batch"], "records", None)
    if not records:
        return  # not a SampleBatch, or no record: the reference raises what the contract says
    read = []
    for record in records:
        payload = getattr(record, "payload", None)
        names = [n for n in reference.TOKEN_FIELD_CANDIDATES if isinstance(payload, dict) and n in payload]
        field = payload[names[0]] if names else None
        if isinstance(field, torch.Tensor) and field.ndim == 1:
            record = SampleRecord(meta=record.meta, payload={**payload, names[0]: _storage_front(field)})
        read.append(record)
    call["sample_batch"] = SampleBatch(records=tuple(read))


BACKEND = reference_with("m-ctb-payload-reads-storage", convert_text_batch=converting(before=_read_storage))
