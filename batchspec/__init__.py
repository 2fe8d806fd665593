"""batchspec: the specification, reference implementation and conformance suite of the packed
training-batch contract between the Zephon data loader and NeMo AutoModel.

The distribution installs one top-level package, ``batchspec``, whose subpackages are the
repository's top-level folders: ``batchspec.reference`` (the reference backend),
``batchspec.conformance`` (the suite, a pytest plugin), ``batchspec.backends`` (backends that
ship with the suite, e.g. ``vectorized``), ``batchspec.bench`` (the performance harness) and
``batchspec.golden`` (golden data and the real-data corpus, package data). ``SPEC.md`` is
package data too. The ``batchspec`` command (``python -m batchspec``) runs the suite against a
backend from any directory: ``batchspec --backend=NAME`` (``batchspec.cli``).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("batchspec")
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "unknown"
