"""under xdoc, segment starts are judged on the joined positions: none is masked. Breaks: [ctb-xdoc], [ctb-segment-starts]"""

from mutant_base import converting, reference_with


def _unmasked_under_xdoc(call):
    if call["allow_cross_document_attention"] is True and call["mask_segment_starts"] is True:
        # Continuous positions are 0 only at the row start and in the pad tail, whose labels
        # are padding labels anyway: the same as not masking segment starts at all.
        call["mask_segment_starts"] = False


BACKEND = reference_with("m-ctb-xdoc-segment-starts-joined", convert_text_batch=converting(before=_unmasked_under_xdoc))
