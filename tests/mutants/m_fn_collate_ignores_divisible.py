"""collate_datums never rounds the padded width up to pad_seq_len_divisible. Breaks: [collate-padded]"""

from mutant_base import reference, reference_with


def collate_datums(datums, *, packed=False, pad_seq_len_divisible=None, ignore_index=-100):
    return reference.collate_datums(datums, packed=packed, pad_seq_len_divisible=None, ignore_index=ignore_index)


BACKEND = reference_with("m-fn-collate-ignores-divisible", collate_datums=collate_datums)
