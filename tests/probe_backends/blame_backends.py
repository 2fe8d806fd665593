"""Backends that probe how a failure is blamed and what its report says
(``--backend=blame_backends:NAME``); each is the reference with one change.

- ``WRONG_ERRORS``: ``get_unpad_data`` raises ``RuntimeError`` where SPEC asks for
  ``ValueError`` (a mask with a fault: [unpad-errors]'s error check catches it, the input is
  not a valid one), and ``IndexError`` on the valid mask of golden case ``VALID_CASE`` (raised
  where the test expects an output: blamed on [unpad-errors] as raised on a valid input).
"""

from __future__ import annotations

import torch
from mutant_base import reference, reference_with  # tests/mutants, on PYTHONPATH with this folder

from batchspec.conformance.tools.goldens import load_case

VALID_CASE = "test_unpad_generated_00"


def _wrong_errors_unpad(attention_mask):
    valid = load_case(VALID_CASE).inputs["mask"]
    if attention_mask.shape == valid.shape and torch.equal(attention_mask, valid):
        raise IndexError("index 7 is out of bounds for dimension 0 with size 7")
    try:
        return reference.get_unpad_data(attention_mask)
    except ValueError as error:
        raise RuntimeError(f"unpad kernel failed: {error}") from None


WRONG_ERRORS = reference_with("wrong-errors-1", get_unpad_data=_wrong_errors_unpad)
