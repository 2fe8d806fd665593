"""targets that start a subdocument are masked even with mask_segment_starts=False. Breaks: [ctb-cross-document-targets]"""

from mutant_base import converting, reference_with


def _always_mask(call):
    if call["mask_segment_starts"] is False:
        call["mask_segment_starts"] = True


BACKEND = reference_with("m-ctb-cross-doc-targets-masked", convert_text_batch=converting(before=_always_mask))
