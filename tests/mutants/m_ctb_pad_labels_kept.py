"""the label of a row's last real input keeps its target, the first pad token. Breaks: [ctb-padding-labels], [unpacked-padding]"""

from mutant_base import converting, padding_counts, reference_with


def _keep_first_pad(out, given):
    labels, input_ids = out["labels"], out["input_ids"]
    length = labels.shape[1] + 1
    for b, n in enumerate(padding_counts(given["sample_batch"], length)):
        if n >= 2:  # the first pad token is an input too: the label targets it
            labels[b, length - n - 1] = input_ids[b, length - n]


BACKEND = reference_with("m-ctb-pad-labels-kept", convert_text_batch=converting(_keep_first_pad))
