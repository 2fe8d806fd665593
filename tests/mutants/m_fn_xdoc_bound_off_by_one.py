"""enable_xdoc_attention accepts a translated position equal to max_sequence_length (> instead of >=). Breaks: [xdoc-contract]"""

from types import SimpleNamespace

from mutant_base import reference, reference_with


def enable_xdoc_attention(batch, packing_contract):
    out = reference.enable_xdoc_attention(dict(batch), SimpleNamespace())  # no bound yet
    max_sequence_length = getattr(packing_contract, "max_sequence_length", None)
    if isinstance(max_sequence_length, int) and not isinstance(max_sequence_length, bool):
        positions = out["position_ids"]
        axes = positions if positions.ndim == 3 else positions[None]
        translated = axes[:, batch["document_ids"] > 0]
        largest = int(translated.max()) if translated.numel() else -1
        if largest > max_sequence_length:
            raise ValueError(
                f"enable_xdoc_attention: translated position_ids reach {largest}, but "
                f"packing_contract.max_sequence_length is {max_sequence_length}"
            )
    batch["attention_document_ids"] = out["attention_document_ids"]
    batch["position_ids"] = out["position_ids"]
    return batch


BACKEND = reference_with("m-fn-xdoc-bound-off-by-one", enable_xdoc_attention=enable_xdoc_attention)
