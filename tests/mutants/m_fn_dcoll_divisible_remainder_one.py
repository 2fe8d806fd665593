"""default_collater rounds the padded width up only on a remainder of 2 or more (`width % d > 1`). Breaks: [dcoll-fields]

A longest list one past a multiple of pad_seq_len_divisible (3 with 2) keeps its width.
"""

from mutant_base import reference, reference_with


def default_collater(batch, pad_seq_len_divisible=None):
    # a width one past a multiple (3 with d=2, 5 with d=4) is left as it is: the remainder test
    # is `> 1` where it should be `> 0`
    divisible = pad_seq_len_divisible
    if divisible and isinstance(divisible, int) and divisible > 1 and batch and isinstance(batch[0], dict):
        lengths = [len(v) for item in batch if isinstance(item, dict) for v in item.values() if isinstance(v, list)]
        if lengths and max(lengths) % divisible == 1:
            divisible = None
    return reference.default_collater(batch, divisible)


BACKEND = reference_with("m-fn-dcoll-divisible-remainder-one", default_collater=default_collater)
