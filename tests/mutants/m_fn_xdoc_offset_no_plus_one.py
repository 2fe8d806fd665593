"""xdoc starts a later subdocument at the previous one's largest coordinate, not one past. Breaks: [xdoc-positions], [xdoc-contract]"""

from types import SimpleNamespace

from mutant_base import reference, reference_with


def enable_xdoc_attention(batch, packing_contract):
    out = reference.enable_xdoc_attention(dict(batch), SimpleNamespace())  # no bound yet
    positions = out["position_ids"]
    axes = positions if positions.ndim == 3 else positions[None]
    document_ids = batch["document_ids"]
    for b in range(document_ids.shape[0]):
        present = sorted({int(d) for d in document_ids[b].tolist() if d > 0})
        for rank, document in enumerate(present):
            axes[:, b, document_ids[b] == document] -= rank  # offset_k is one short per earlier subdocument
    max_sequence_length = getattr(packing_contract, "max_sequence_length", None)
    if isinstance(max_sequence_length, int) and not isinstance(max_sequence_length, bool):
        translated = axes[:, document_ids > 0]
        largest = int(translated.max()) if translated.numel() else -1
        if largest >= max_sequence_length:
            raise ValueError(
                f"enable_xdoc_attention: translated position_ids reach {largest}, but "
                f"packing_contract.max_sequence_length is {max_sequence_length}"
            )
    batch["attention_document_ids"] = out["attention_document_ids"]
    batch["position_ids"] = positions
    return batch


BACKEND = reference_with("m-fn-xdoc-offset-no-plus-one", enable_xdoc_attention=enable_xdoc_attention)
