"""What every mutant (and probe backend) is built from: the reference with some names replaced.

A mutant module (``tests/mutants/m_<what>.py``) is the reference with one realistic, subtle bug.
The first line of its docstring says what the bug is and ends with the clauses the bug breaks,
in brackets: ``labels are the tokens themselves, not the next ones. Breaks: [ctb-shift]``. It
exposes the backend as ``BACKEND`` (``--backend=m_<what>:BACKEND`` with this folder on
``PYTHONPATH``); ``tests/mutants/sweep.py`` runs the suite against every mutant. The probe
backends of ``tests/probe_backends/`` are built the same way.
"""

from __future__ import annotations

from types import SimpleNamespace

from batchspec import reference

__all__ = ["reference", "reference_with"]


def reference_with(version: str, **overrides) -> SimpleNamespace:
    """A backend object: every public name of the reference, its declarations, and
    ``overrides`` in place of the reference's names.

    Raises:
        ValueError: an override names something the reference does not export.
    """
    names = {name: getattr(reference, name) for name in reference.__all__}
    names.update(
        __version__=version,
        BATCHSPEC_SPEC_VERSION=reference.BATCHSPEC_SPEC_VERSION,
        BATCHSPEC_CAPABILITIES=reference.BATCHSPEC_CAPABILITIES,
    )
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ValueError(f"overrides of names the reference does not export: {unknown}")
    names.update(overrides)
    return SimpleNamespace(**names)
