"""THD seq_lens_padded adds n, not the n - 1 padded inputs, to the last span. Breaks: [thd-lengths]"""

from mutant_base import converting, padding_counts, reference, reference_with


def _count_n(out, given):
    padded = out.get("seq_lens_padded")
    if padded is not None:
        length = out["input_ids"].shape[1] + 1
        for b, n in enumerate(padding_counts(given["sample_batch"], length)):
            if n >= 1:
                last = int((padded[b] != reference.THD_LENGTH_PAD).sum()) - 1
                padded[b, last] += 1


BACKEND = reference_with("m-ctb-thd-padded-counts-n", convert_text_batch=converting(_count_n))
