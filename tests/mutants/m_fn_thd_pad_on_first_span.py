"""THD seq_lens_padded adds a row's padding to its first span, not its last. Breaks: [thd-lengths]"""

import torch
from mutant_base import reference, reference_with


def convert_batch_output(batch, output_format):
    out = reference.convert_batch_output(batch, output_format)
    if output_format != "thd":
        return out
    seq_lens = out["seq_lens"]
    padded = seq_lens.clone()
    sequence_length = out["attention_document_ids"].shape[1]
    for b in range(seq_lens.shape[0]):
        valid = seq_lens[b] != reference.THD_LENGTH_PAD
        padded[b, 0] += sequence_length - int(seq_lens[b][valid].sum())
    out["seq_lens_padded"] = padded.to(torch.int64)
    return out


BACKEND = reference_with("m-fn-thd-pad-on-first-span", convert_batch_output=convert_batch_output)
