"""labels whose target is padding are -100, not the given ignore_index. Breaks: [ctb-ignore-index], [ctb-padding-labels]"""

from mutant_base import converting, padding_counts, reference_with


def _minus_100(out, given):
    labels = out["labels"]
    length = labels.shape[1] + 1
    for b, n in enumerate(padding_counts(given["sample_batch"], length)):
        if n >= 1:
            labels[b, length - n - 1 :] = -100


BACKEND = reference_with("m-ctb-pad-labels-minus100", convert_text_batch=converting(_minus_100))
