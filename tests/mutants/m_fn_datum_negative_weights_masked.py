"""Datum.to_features masks labels where weights <= 0, not == 0. Breaks: [datum-to-features], [collate-weights]"""

from mutant_base import reference, reference_with


class Datum(reference.Datum):
    def to_features(self, *, ignore_index: int = reference.CROSS_ENTROPY_IGNORE_IDX) -> dict[str, list]:
        features = super().to_features(ignore_index=ignore_index)
        weights = self.loss_fn_inputs.get("weights")
        if "labels" in features and weights is not None:
            labels = self.loss_fn_inputs["target_tokens"].masked_fill(weights <= 0, ignore_index)
            features["labels"] = labels.tolist()
        return features


BACKEND = reference_with("m-fn-datum-negative-weights-masked", Datum=Datum)
