"""Backends whose ``BATCHSPEC_CAPABILITIES`` is malformed (``--backend=capability_backends:NAME``):
each is the reference with its declaration replaced, and each must be refused before any test
runs, with a report that says why (conformance/run/backends.py, ``_declared_capabilities``).

- ``GENERATOR``: the reference's profiles as a generator, which a reader consumes (read once
  by validation, the run saw no profile and passed with 0 tests);
- ``NUMBER``: ``42``, not a collection at all (an internal error with no report before);
- ``NOT_NAMES``: a list holding a number beside a profile name.
"""

from __future__ import annotations

from mutant_base import reference, reference_with  # tests/mutants, on PYTHONPATH with this folder

GENERATOR = reference_with(
    "capabilities-generator-1", BATCHSPEC_CAPABILITIES=(name for name in reference.BATCHSPEC_CAPABILITIES)
)
NUMBER = reference_with("capabilities-number-1", BATCHSPEC_CAPABILITIES=42)
NOT_NAMES = reference_with("capabilities-not-names-1", BATCHSPEC_CAPABILITIES=["unpad_data", 7])
