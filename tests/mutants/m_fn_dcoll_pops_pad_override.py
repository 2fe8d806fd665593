"""default_collater pops ___PAD_TOKEN_IDS___ from the caller's item 0 (upstream's side effect). Breaks: [collaters-no-mutation]"""

from mutant_base import reference, reference_with

PAD_TOKEN_IDS_KEY = "___PAD_TOKEN_IDS___"


def default_collater(batch, pad_seq_len_divisible=None):
    out = reference.default_collater(batch, pad_seq_len_divisible)
    if isinstance(batch[0], dict):
        batch[0].pop(PAD_TOKEN_IDS_KEY, None)
    return out


BACKEND = reference_with("m-fn-dcoll-pops-pad-override", default_collater=default_collater)
