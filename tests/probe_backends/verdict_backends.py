"""Backends that probe the verdict, the expectations and crash isolation: each is the reference
with one change (``--backend=verdict_backends:NAME``).

- ``PLANTED``: ``get_unpad_data`` reports ``max_seqlen`` one too large (a MUST clause,
  [unpad-outputs], breaks);
- ``SHOULD_ONLY``: ``convert_text_batch`` re-validates the whole contract on every call
  (only the SHOULD clause [contract-no-revalidation] breaks);
- ``FRAGILE``: a native backend's worst days: ``get_unpad_data`` aborts the process on the mask
  of golden case ``ABORT_CASE`` and never returns on the mask of ``HANG_CASE``;
- ``INTERRUPTING``: ``get_unpad_data`` raises ``KeyboardInterrupt`` on ``ABORT_CASE``'s mask
  (what Ctrl-C does mid-run).
"""

from __future__ import annotations

import os
import time

import torch
from mutant_base import reference_with  # tests/mutants, on PYTHONPATH with this folder

from batchspec import reference
from batchspec.conformance.tools.goldens import load_case

BATCHSPEC_SPEC_VERSION = reference.BATCHSPEC_SPEC_VERSION
ABORT_CASE, HANG_CASE = "test_unpad_binary_int", "test_unpad_split_id"


def _max_seqlen_one_too_large(attention_mask):
    indices, cu_seqlens, max_seqlen = reference.get_unpad_data(attention_mask)
    return indices, cu_seqlens, max_seqlen + 1


def _revalidating_convert(sample_batch, packing_contract, *args, **kwargs):
    reference.require_supported_packing_contract(packing_contract)
    return reference.convert_text_batch(sample_batch, packing_contract, *args, **kwargs)


def _same(mask, case: str) -> bool:
    other = load_case(case).inputs["mask"]
    return mask.dtype == other.dtype and mask.shape == other.shape and torch.equal(mask, other)


def _fragile_unpad(attention_mask):
    if _same(attention_mask, ABORT_CASE):
        os.abort()
    if _same(attention_mask, HANG_CASE):
        while True:
            time.sleep(3600)
    return reference.get_unpad_data(attention_mask)


def _interrupting_unpad(attention_mask):
    if _same(attention_mask, ABORT_CASE):
        raise KeyboardInterrupt
    return reference.get_unpad_data(attention_mask)


PLANTED = reference_with("planted-1", get_unpad_data=_max_seqlen_one_too_large)
SHOULD_ONLY = reference_with("should-only-1", convert_text_batch=_revalidating_convert)
FRAGILE = reference_with("fragile-1", get_unpad_data=_fragile_unpad)
INTERRUPTING = reference_with("interrupting-1", get_unpad_data=_interrupting_unpad)


def _chatty_unpad(attention_mask):
    print("x" * 3_000_000)  # three megabytes of stdout on every call, and a wrong answer
    return _max_seqlen_one_too_large(attention_mask)


# ``CHATTY``: ``get_unpad_data`` prints megabytes (its captured output is cut in the console and report)
CHATTY = reference_with("chatty-1", get_unpad_data=_chatty_unpad)
