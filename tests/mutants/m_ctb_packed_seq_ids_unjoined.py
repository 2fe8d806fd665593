"""_packed_seq_ids copy document_ids, not the xdoc-joined selected ids. Breaks: [batched-packed-seq-ids], [ctb-selected-ids]"""

from mutant_base import converting, reference_with


def _unjoined(out, given):
    if "_packed_seq_ids" in out:
        out["_packed_seq_ids"] = out["document_ids"].clone()


BACKEND = reference_with("m-ctb-packed-seq-ids-unjoined", convert_text_batch=converting(_unjoined))
