"""the metadata bundle is built from document_ids, not the xdoc-joined selected ids. Breaks: [batched-metadata], [ctb-selected-ids]"""

from mutant_base import converting, reference, reference_with


def _unselected(out, given):
    if "cu_seqlens" in out:
        out.update(reference.build_packed_sequence_metadata(out["document_ids"]))


BACKEND = reference_with("m-ctb-cu-seqlens-unselected", convert_text_batch=converting(_unselected))
