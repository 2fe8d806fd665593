"""ids come from an int16 cumsum: past 32767 they wrap. Breaks: [ctb-document-ids], [ctb-attention-ids], [batched-metadata]"""

import torch
from m_ctb_doc_ids_int8 import narrowed_ids
from mutant_base import reference_with

BACKEND = reference_with("m-ctb-doc-ids-int16", convert_text_batch=narrowed_ids(torch.int16))
