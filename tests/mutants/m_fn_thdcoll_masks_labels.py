"""packed_sequence_thd_collater in synthesis mode sets labels to -100 where an item's attention_mask is 0. Breaks: [thdcoll-synthesized]"""

from mutant_base import reference, reference_with


def packed_sequence_thd_collater(batch):
    out = reference.packed_sequence_thd_collater(batch)
    if len(batch) == 0 or "seq_lens" in batch[0]:
        return out
    labels = out["labels"].clone()
    for b, item in enumerate(batch):
        for i, keep in enumerate(list(item.get("attention_mask", []))):
            if not keep:
                labels[b, i] = -100
    out["labels"] = labels
    return out


BACKEND = reference_with("m-fn-thdcoll-masks-labels", packed_sequence_thd_collater=packed_sequence_thd_collater)
