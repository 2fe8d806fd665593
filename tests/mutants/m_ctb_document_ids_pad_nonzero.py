"""document_ids at padding are the last id + 1 (cumsum of position == 0), not 0. Breaks: [ctb-document-ids]"""

import torch
from mutant_base import converting, reference_with


def _pad_ids(out, given):
    ids = out["document_ids"]
    next_id = ids.max(dim=1, keepdim=True).values + 1
    out["document_ids"] = torch.where(out["padding_mask"], next_id.expand_as(ids), ids)


BACKEND = reference_with("m-ctb-document-ids-pad-nonzero", convert_text_batch=converting(_pad_ids))
