"""rows b >= 4 keep the label of their last real input (target: the first pad). Breaks: [ctb-padding-labels], [unpacked-padding]"""

from mutant_base import converting, padding_counts, reference_with, token_field


def _keep_first_pad_target(out, given):
    if given["mask_segment_starts"] is False:  # with it on, the pad tail's position 0 masks that label anyway
        batch, labels, inputs = given["sample_batch"], out["labels"], out["input_ids"]
        length = labels.shape[1] + 1
        for b, n in enumerate(padding_counts(batch, length)):
            if b >= 4 and n >= 1:
                first_pad = length - n
                if first_pad < length - 1:
                    labels[b, first_pad - 1] = inputs[b, first_pad]
                else:  # the target is the row's last unshifted token
                    tokens = batch.records[b].payload[token_field(batch.records[b])]
                    labels[b, first_pad - 1] = int(tokens[-1]) if len(tokens) == length else given["pad_token_id"]


BACKEND = reference_with("m-ctb-rows-beyond-four", convert_text_batch=converting(_keep_first_pad_target))
