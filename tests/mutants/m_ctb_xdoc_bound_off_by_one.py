"""convert_text_batch's own xdoc bound accepts a translated position equal to max_sequence_length. Breaks: [xdoc-contract], [ctb-xdoc]"""

from types import SimpleNamespace

from mutant_base import reference, reference_with


def convert_text_batch(
    sample_batch,
    packing_contract,
    ignore_index,
    mask_segment_starts,
    allow_cross_document_attention,
    output_format="batched",
    pad_to_length=None,
    pad_token_id=None,
):
    # A backend that bounds the translated positions inline (> instead of >=) while its
    # enable_xdoc_attention is right: a bound one larger lets a position equal to it through, and
    # any larger position still raises the right error (naming the caller's bound).
    rest = (
        ignore_index,
        mask_segment_starts,
        allow_cross_document_attention,
        output_format,
        pad_to_length,
        pad_token_id,
    )
    bound = getattr(packing_contract, "max_sequence_length", None)
    if allow_cross_document_attention is True and isinstance(bound, int) and not isinstance(bound, bool):
        loose = SimpleNamespace(
            packed_mask_type=getattr(packing_contract, "packed_mask_type", None),
            return_packed_sequence_metadata=getattr(packing_contract, "return_packed_sequence_metadata", None),
            max_sequence_length=bound + 1,
        )
        try:
            return reference.convert_text_batch(sample_batch, loose, *rest)
        except ValueError:
            pass
    return reference.convert_text_batch(sample_batch, packing_contract, *rest)


BACKEND = reference_with("m-ctb-xdoc-bound-off-by-one", convert_text_batch=convert_text_batch)
