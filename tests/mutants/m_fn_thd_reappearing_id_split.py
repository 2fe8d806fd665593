"""THD output starts a new span at every id change and never rejects a reappearing id. Breaks: [thd-errors]"""

from mutant_base import reference, reference_with


def convert_batch_output(batch, output_format):
    if output_format != "thd" or "attention_document_ids" not in batch:
        return reference.convert_batch_output(batch, output_format)
    ids = batch["attention_document_ids"]
    # like unique_consecutive: every change of id starts a new span, whatever came before
    runs = ids.clone()
    for b in range(ids.shape[0]):
        run, previous = 0, None
        for i, value in enumerate(ids[b].tolist()):
            if value > 0:
                if value != previous:
                    run += 1
                runs[b, i] = run
            previous = value
    out = reference.convert_batch_output({**batch, "attention_document_ids": runs}, output_format)
    for key in ("seq_lens", "seq_lens_padded", "qkv_format"):
        batch[key] = out[key]
    return batch


BACKEND = reference_with("m-fn-thd-reappearing-id-split", convert_batch_output=convert_batch_output)
