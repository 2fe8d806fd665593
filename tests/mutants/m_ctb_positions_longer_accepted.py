"""positions longer than the token field are accepted and read up to L (only a shorter length is refused). Breaks: [ctb-input-errors]"""

from mutant_base import converting, reference_with, token_field
from zephon import SampleBatch, SampleRecord


def _first_l_positions(call):
    # a backend whose length check is `len(positions) < L`: longer positions (L + 1 too) pass,
    # and only their first L entries are ever read
    batch = call["sample_batch"]
    records = getattr(batch, "records", None)
    if not records:
        return
    rebuilt = []
    for record in records:
        payload = getattr(record, "payload", None)
        if isinstance(payload, dict) and payload.get("positions") is not None:
            try:
                length = len(payload[token_field(record)])
                positions = payload["positions"]
                if len(positions) > length:
                    record = SampleRecord(meta=record.meta, payload={**payload, "positions": positions[:length]})
            except (StopIteration, TypeError):
                pass  # no token field, or a field without a length: the reference's own errors
        rebuilt.append(record)
    call["sample_batch"] = SampleBatch(records=tuple(rebuilt))


BACKEND = reference_with("m-ctb-positions-longer-accepted", convert_text_batch=converting(before=_first_l_positions))
