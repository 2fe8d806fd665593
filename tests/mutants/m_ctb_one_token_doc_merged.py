"""Starts where positions fall: a 1-token document joins the next. Breaks: [ctb-boundaries-from-zeros], [ctb-document-ids], [xdoc-contract]

With cross-document attention, the merged document's positions run on: the largest translated
position moves, so a ValueError [xdoc-contract] asks for may be missing (or raised wrongly).
"""

from mutant_base import reference, reference_with

BASE_FIELDS = ("input_ids", "labels", "position_ids", "padding_mask")


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
    if not isinstance(allow_cross_document_attention, bool):
        return reference.convert_text_batch(
            sample_batch,
            packing_contract,
            ignore_index,
            mask_segment_starts,
            allow_cross_document_attention,
            output_format,
            pad_to_length,
            pad_token_id,
        )
    reference.check_output_format(output_format)
    # Everything but the ids as the reference builds them (xdoc off, no route).
    out = reference.convert_text_batch(
        sample_batch,
        packing_contract,
        ignore_index,
        mask_segment_starts,
        False,
        "thd",
        pad_to_length,
        pad_token_id,
    )
    batch = {name: out[name] for name in BASE_FIELDS}
    positions = batch["position_ids"]
    starts = positions == positions  # the row start
    starts[:, 1:] = positions[:, 1:] < positions[:, :-1]
    document_ids = starts.long().cumsum(dim=1)
    document_ids[batch["padding_mask"]] = 0
    batch["document_ids"] = document_ids
    # The rest of the pipeline as the reference runs it, from these ids.
    reference.adapt_model_inputs(batch)
    if allow_cross_document_attention:
        reference.enable_xdoc_attention(batch, packing_contract)
    reference.convert_batch_output(batch, output_format)
    if output_format == "batched":
        reference.apply_batched_output(batch, packing_contract)
    return batch


BACKEND = reference_with("m-ctb-one-token-doc-merged", convert_text_batch=convert_text_batch)
