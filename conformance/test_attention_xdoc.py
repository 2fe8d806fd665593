"""Cross-document attention on live mappings (SPEC.md, "``enable_xdoc_attention``"): the mapping
it returns is the one it was given.

Every hand-written value of xdoc (worked examples C and G, mRoPE offsets (A16, F14), processor
exclusions, ``max_sequence_length`` bounds, bad inputs) is a golden case of
``golden/cases/attention.py``, ``golden/cases/convert.py`` and
``golden/cases/field_reports.py``; a golden run also reports any input tensor modified in place.
"""

from __future__ import annotations

import pytest

from batchspec.conformance.golden.case_values import stored_inputs
from batchspec.conformance.helpers.asserts import check
from batchspec.conformance.helpers.sample_batches import Contract


@pytest.mark.requires("xdoc")
@pytest.mark.clause("xdoc-untouched")
def test_enable_xdoc_attention_returns_the_mapping_it_was_given(backend):
    """F14's converted mRoPE mapping: the same mapping comes back (its values: golden case
    test_f14_xdoc_leaves_the_other_fields_untouched)."""
    batch = stored_inputs("test_f14_xdoc_leaves_the_other_fields_untouched")["batch"]
    out = backend.enable_xdoc_attention(batch, Contract())
    check(out is batch, "enable_xdoc_attention must return the same mapping", clause="xdoc-untouched")
