"""ids come from an int8 cumsum: past 127 they wrap. Breaks: [ctb-document-ids], [ctb-attention-ids], [batched-metadata], [thd-lengths]"""

import itertools

import torch
from mutant_base import converting, reference, reference_with


def _thd_lengths(batch):
    """THD lengths as runs of equal nonzero ids (narrowed ids need not be positive)."""
    seq_lens, seq_lens_padded = [], []
    for row in batch["attention_document_ids"].tolist():
        real = len(row)
        while real and row[real - 1] == 0:
            real -= 1
        runs = [len(list(group)) for _, group in itertools.groupby(row[:real])]
        seq_lens.append(runs)
        seq_lens_padded.append(runs[:-1] + [runs[-1] + len(row) - real])
    width = max(len(runs) for runs in seq_lens)
    for key, table in (("seq_lens", seq_lens), ("seq_lens_padded", seq_lens_padded)):
        filled = [runs + [reference.THD_LENGTH_PAD] * (width - len(runs)) for runs in table]
        batch[key] = torch.tensor(filled, dtype=torch.int64)
    batch["qkv_format"] = "thd"


def narrowed_ids(dtype):
    """A ``convert_text_batch`` whose subdocument ids go through ``dtype`` (wrapping past its
    largest value) before everything built from them."""

    def wrap(out, given):
        # every check and error is the reference's
        wrapped = out["document_ids"].to(dtype).to(torch.int64)
        if torch.equal(wrapped, out["document_ids"]):
            return
        # everything built from the ids is built from the wrapped ones (positions before xdoc)
        call = dict(given, allow_cross_document_attention=False, output_format="batched")
        base = reference.convert_text_batch(*call.values())
        batch = {key: base[key] for key in ("input_ids", "labels", "position_ids", "padding_mask")}
        batch["document_ids"] = wrapped
        reference.adapt_model_inputs(batch)
        if given["allow_cross_document_attention"]:
            reference.enable_xdoc_attention(batch, given["packing_contract"])
        if given["output_format"] == "thd":
            _thd_lengths(batch)
        else:
            reference.apply_batched_output(batch, given["packing_contract"])
        out.clear()
        out.update(batch)

    return converting(wrap)


BACKEND = reference_with("m-ctb-doc-ids-int8", convert_text_batch=narrowed_ids(torch.int8))
