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

__all__ = ["converting", "padding_counts", "reference", "reference_with", "token_field"]


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


def converting(after=None, *, before=None):
    """A ``convert_text_batch`` with SPEC's signature that runs the reference's: ``before(call)``
    may change the call's arguments first (``call``: every parameter by name), and
    ``after(out, given)`` may change the reference's output in place (``given``: the arguments
    as the caller passed them)."""

    def convert_text_batch(
        sample_batch,
        packing_contract,
        ignore_index,
        mask_segment_starts,
        allow_cross_document_attention,
        output_format="batched",
        pad_to_length=None,
        pad_token_id=None,
    ):
        given = dict(
            sample_batch=sample_batch,
            packing_contract=packing_contract,
            ignore_index=ignore_index,
            mask_segment_starts=mask_segment_starts,
            allow_cross_document_attention=allow_cross_document_attention,
            output_format=output_format,
            pad_to_length=pad_to_length,
            pad_token_id=pad_token_id,
        )
        call = dict(given)
        if before is not None:
            before(call)
        out = reference.convert_text_batch(*call.values())
        if after is not None:
            after(out, given)
        return out

    return convert_text_batch


def token_field(record) -> str:
    """The name of a record's token field (the reference's candidates, in order)."""
    return next(name for name in reference.TOKEN_FIELD_CANDIDATES if name in record.payload)


def padding_counts(sample_batch, length: int) -> list[int]:
    """Each row's trailing padding count n after the unpacked route's padding to ``length``."""
    return [(r.meta.padding_length or 0) + length - len(r.payload[token_field(r)]) for r in sample_batch.records]
