"""without xdoc, attention_document_ids is the document_ids tensor itself, not a copy. Breaks: [tb-no-aliasing]"""

from mutant_base import converting, reference_with


def _alias(out, given):
    if given["allow_cross_document_attention"] is False:
        out["attention_document_ids"] = out["document_ids"]


BACKEND = reference_with("m-ctb-attention-ids-alias", convert_text_batch=converting(_alias))
