"""Backends that change torch's process-wide settings and leave them changed
(``--backend=state_backends:NAME``); each is the reference with one change. The suite sets the
settings back after each call and each test, and blames the test whose call changed them on
[global-state] (conformance/run/torch_state.py), never the later, unrelated tests.

- ``HALF_DEFAULT``: ``adapt_model_inputs`` calls ``torch.set_default_dtype(torch.float16)``
  (a kernel's set-up left behind): every later test builds its float tensors in float16, and
  the golden cases of ``Datum`` that want float32 weights failed on [datum-construct];
- ``LOADER_THREADS``: ``ZephonDataLoader`` (a class: no call of it is wrapped) sets the number
  of threads up by one on construction; only the guard around the test sees it.

And loaders whose ``load_state_dict`` misjudges a re-signed, reshaped body [state-body-valid]:

- ``LATE_BODY_CHECK``: the 1.3 reference's loader: it checks the envelope only and accepts any
  ``state`` object, which Zephon then fails on (``KeyError``, ``IndexError``, ...) or resumes as
  an empty or another stream at the first ``next()``;
- ``BODY_TYPE_ERROR``: checks the structure at load but raises ``TypeError`` for a mismatch
  instead of the ``malformed body`` ``ValueError``.
"""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

import torch
from mutant_base import reference, reference_with  # tests/mutants, on PYTHONPATH with this folder

from batchspec.reference import checkpoint


def _half_default_adapt(*args, **kwargs):
    torch.set_default_dtype(torch.float16)
    return reference.adapt_model_inputs(*args, **kwargs)


class _OneThreadLoader(reference.ZephonDataLoader):
    def __init__(self, *args, **kwargs):
        torch.set_num_threads(torch.get_num_threads() + 1)
        super().__init__(*args, **kwargs)


HALF_DEFAULT = reference_with("half-default-1", adapt_model_inputs=_half_default_adapt)
LOADER_THREADS = reference_with("loader-threads-1", ZephonDataLoader=_OneThreadLoader)


@contextmanager
def _structure_check(replacement):
    """The reference's envelope decoding with ``replacement`` for its check of the body's
    ``state`` (for the length of one ``load_state_dict``)."""
    with mock.patch.object(checkpoint, "check_state_structure", replacement):
        yield


class _LateBodyCheckLoader(reference.ZephonDataLoader):
    def load_state_dict(self, state):
        with _structure_check(lambda state, *, canonical_replicas: None):
            super().load_state_dict(state)


_CHECK_STATE_STRUCTURE = checkpoint.check_state_structure


def _type_error_check(state, *, canonical_replicas):
    try:
        _CHECK_STATE_STRUCTURE(state, canonical_replicas=canonical_replicas)
    except ValueError as error:
        raise TypeError(f"the state has the wrong structure: {error}") from None


class _TypeErrorLoader(reference.ZephonDataLoader):
    def load_state_dict(self, state):
        with _structure_check(_type_error_check):
            super().load_state_dict(state)


LATE_BODY_CHECK = reference_with("late-body-check-1", ZephonDataLoader=_LateBodyCheckLoader)
BODY_TYPE_ERROR = reference_with("body-type-error-1", ZephonDataLoader=_TypeErrorLoader)
