"""adapt_model_inputs without eligibility returns document_ids itself. Breaks: [adapt-attention-ids], [tb-no-aliasing]"""

from mutant_base import reference, reference_with


def adapt_model_inputs(batch, attention_eligibility=None):
    out = reference.adapt_model_inputs(batch, attention_eligibility)
    if attention_eligibility is None:
        out["attention_document_ids"] = out["document_ids"]
    return out


BACKEND = reference_with("m-fn-adapt-aliases-document-ids", adapt_model_inputs=adapt_model_inputs)
