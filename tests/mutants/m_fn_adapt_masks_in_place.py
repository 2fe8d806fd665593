"""adapt_model_inputs zeroes ineligible tokens in the caller's document_ids in place before copying them. Breaks: [adapt-no-mutation]"""

from mutant_base import reference, reference_with


def adapt_model_inputs(batch, attention_eligibility=None):
    out = reference.adapt_model_inputs(batch, attention_eligibility)  # validates, builds the new ids
    if attention_eligibility is not None:
        out["document_ids"].masked_fill_(~attention_eligibility, 0)
    return out


BACKEND = reference_with("m-fn-adapt-masks-in-place", adapt_model_inputs=adapt_model_inputs)
