"""adapt_model_inputs zeroes ineligible tokens in the caller's document_ids in place, then copies. Breaks: [adapt-no-mutation], [tb-layout]

On document_ids laid out with a zero stride (one row seen B times) the in-place write reaches every
row, so the output differs from the contiguous input's: the layout check fails too.
"""

from mutant_base import reference, reference_with


def adapt_model_inputs(batch, attention_eligibility=None):
    out = reference.adapt_model_inputs(batch, attention_eligibility)  # validates, builds the new ids
    if attention_eligibility is not None:
        out["document_ids"].masked_fill_(~attention_eligibility, 0)
    return out


BACKEND = reference_with("m-fn-adapt-masks-in-place", adapt_model_inputs=adapt_model_inputs)
