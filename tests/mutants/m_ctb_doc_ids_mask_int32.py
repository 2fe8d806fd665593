"""the "document_ids" attention_mask is int32, not int64. Breaks: [batched-document-ids-mask], [tb-dtypes]"""

import torch
from mutant_base import converting, reference_with


def _int32_mask(out, given):
    mask = out.get("attention_mask")
    if mask is not None and mask.dtype == torch.int64:
        out["attention_mask"] = mask.to(torch.int32)


BACKEND = reference_with("m-ctb-doc-ids-mask-int32", convert_text_batch=converting(_int32_mask))
