"""get_unpad_data reports max_seqlen one too large. Breaks: [unpad-outputs]"""

from mutant_base import reference, reference_with


def get_unpad_data(attention_mask):
    indices, cu_seqlens, max_seqlen = reference.get_unpad_data(attention_mask)
    return indices, cu_seqlens, max_seqlen + 1


BACKEND = reference_with("m-unpad-max-seqlen-plus-one", get_unpad_data=get_unpad_data)
