"""Backends that change torch's process-wide settings and leave them changed
(``--backend=state_backends:NAME``); each is the reference with one change. The suite sets the
settings back after each call and each test, and blames the test whose call changed them on
[global-state] (conformance/torch_state.py), never the later, unrelated tests.

- ``HALF_DEFAULT``: ``adapt_model_inputs`` calls ``torch.set_default_dtype(torch.float16)``
  (a kernel's set-up left behind): every later test builds its float tensors in float16, and
  the golden cases of ``Datum`` that want float32 weights failed on [datum-construct];
- ``LOADER_THREADS``: ``ZephonDataLoader`` (a class: no call of it is wrapped) sets the number
  of threads up by one on construction; only the guard around the test sees it.
"""

from __future__ import annotations

import torch
from mutant_base import reference, reference_with  # tests/mutants, on PYTHONPATH with this folder


def _half_default_adapt(*args, **kwargs):
    torch.set_default_dtype(torch.float16)
    return reference.adapt_model_inputs(*args, **kwargs)


class _OneThreadLoader(reference.ZephonDataLoader):
    def __init__(self, *args, **kwargs):
        torch.set_num_threads(torch.get_num_threads() + 1)
        super().__init__(*args, **kwargs)


HALF_DEFAULT = reference_with("half-default-1", adapt_model_inputs=_half_default_adapt)
LOADER_THREADS = reference_with("loader-threads-1", ZephonDataLoader=_OneThreadLoader)
