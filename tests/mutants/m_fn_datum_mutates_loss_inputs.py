"""Datum converts the non-tensor loss_fn_inputs values inside the caller's dict (upstream's side effect). Breaks: [datum-construct]"""

import torch
from mutant_base import reference, reference_with


class Datum(reference.Datum):
    def __post_init__(self) -> None:
        for key, value in self.loss_fn_inputs.items():
            if not isinstance(value, torch.Tensor):
                self.loss_fn_inputs[key] = torch.as_tensor(value)
        super().__post_init__()


BACKEND = reference_with("m-fn-datum-mutates-loss-inputs", Datum=Datum)
