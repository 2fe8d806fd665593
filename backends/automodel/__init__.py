"""batchspec ``automodel``: upstream nemo-automodel 0.7.0's own functions, run through the suite.

Nothing here reimplements the contract. The names below are upstream's objects themselves,
imported from ``nemo_automodel.components.datasets`` by ``upstream.py`` beside it (which
provides a stand-in ``transformers.masking_utils`` for the import when ``transformers`` is not
installed). Their signatures already are SPEC's ([api-signatures]), so the adapter renames
nothing and wraps nothing: whatever the suite finds is upstream's behaviour, and a failing
clause is a place where SPEC deliberately differs from upstream (``EXPECTED_DIFFERENCES``,
docs/upstream.md, "Upstream through the suite"), or a suite bug.

Exposed (SPEC.md sections 2 and 8):

- ``get_unpad_data(attention_mask)``: ``attention_mask`` a 2-D bool or integer tensor
  ``[B, S]``; returns ``(indices, cu_seqlens, max_seqlen)``: int64 ``[tokens]``, int32
  ``[spans + 1]``, a Python ``int``. Raises ``ValueError`` when ``attention_mask.ndim != 2`` or
  it has no nonzero entry ([unpad-errors], [unpad-binary], [unpad-indexed], [unpad-outputs],
  [unpad-precondition]).
- ``build_packed_sequence_metadata(attention_mask)``: ``attention_mask`` ``[B, S]``; returns a
  ``dict`` with ``packed_token_indices`` int64 ``[B, S]``, ``cu_seqlens`` int32
  ``[B, max(1, max id) + 1]`` and ``max_seqlen`` (``int``); raises ``ValueError`` as
  ``get_unpad_data`` ([meta-errors], [meta-indices], [meta-cu-seqlens], [meta-max-seqlen],
  [meta-return]).
- ``Datum(input_ids, loss_fn_inputs={})``: ``input_ids`` 1-D ``[T]`` (non-tensors become
  int64); raises ``ValueError`` for any other number of dimensions ([datum-construct],
  [datum-errors]); ``Datum.to_features(*, ignore_index=-100)`` returns plain lists
  ([datum-to-features]).
- ``collate_datums(datums, *, packed=False, pad_seq_len_divisible=None, ignore_index=-100)``:
  padded int64 ``[B, W]`` fields, or one packed THD row ``[1, ΣT]``, plus float32 side inputs;
  raises ``ValueError``, ``RuntimeError`` or ``KeyError`` as [collate-errors] lists
  ([collate-padded], [collate-packed], [collate-weights], [collate-side-inputs]).
- ``default_collater(batch, pad_seq_len_divisible=None)``, ``packed_sequence_thd_collater(batch)``
  and ``pack_features_for_thd(features, *, ignore_index=-100)``: int64 ``[B, S]`` fields (THD
  lengths ``[B, K]`` padded with ``-1000``); raise ``KeyError``, ``IndexError``,
  ``RuntimeError`` or ``ValueError`` as [dcoll-fields], [thdcoll-prepacked],
  [thdcoll-synthesized] and [pack-errors] say.

Upstream has no ``require_supported_packing_contract``, ``convert_text_batch``,
``adapt_model_inputs``, ``enable_xdoc_attention``, ``convert_batch_output`` or
``ZephonDataLoader``, so only the four profiles above are declared; the suite reports the rest
as not supported.

Use: ``pip install --no-deps nemo-automodel==0.7.0``, then
``pytest conformance --backend=automodel``.

Raises:
    ImportError: on import, when nemo-automodel 0.7.0 is not installed; the message gives the
        install command (``pip install --no-deps nemo-automodel==0.7.0``).
"""

from __future__ import annotations

from batchspec.backends.automodel.upstream import load_upstream_modules

_UPSTREAM = load_upstream_modules()

get_unpad_data = _UPSTREAM.packing.get_unpad_data
build_packed_sequence_metadata = _UPSTREAM.packing.build_packed_sequence_metadata
Datum = _UPSTREAM.datum.Datum
collate_datums = _UPSTREAM.datum.collate_datums
default_collater = _UPSTREAM.utils.default_collater
packed_sequence_thd_collater = _UPSTREAM.utils.packed_sequence_thd_collater
pack_features_for_thd = _UPSTREAM.utils.pack_features_for_thd

# upstream's own version (nemo_automodel.__version__, "0.7.0")
__version__ = _UPSTREAM.version

# The SPEC.md version this backend declares: 1.1, left as it was when 1.2 came out (1.2 only
# clarifies 1.1), so the suite also runs a backend that declares an earlier minor version.
BATCHSPEC_SPEC_VERSION = "1.1"

# Exactly the profiles whose functions upstream 0.7.0 has (SPEC.md, "Conformance").
BATCHSPEC_CAPABILITIES = frozenset({"unpad_data", "packed_metadata", "datum", "collaters"})

# The clauses upstream 0.7.0 fails: clause -> (the Decision of SPEC.md's "Decisions" where SPEC
# deliberately differs from upstream, what upstream does there). The one home of these facts:
# docs/upstream.md's results table is generated from them and a run's report
# (batchspec/automodel_results.py), and tests/upstream/test_automodel_backend.py checks that a run fails
# exactly these clauses.
EXPECTED_DIFFERENCES: dict[str, tuple[str, str]] = {
    "collaters-no-mutation": (
        "D-6",
        "`default_collater` pops `___PAD_TOKEN_IDS___` from item 0, `packed_sequence_thd_collater` from "
        "every item; THD synthesis also rewrites the items (adds `seq_lens`, `seq_lens_padded`, "
        "`position_ids`, pops `attention_mask`, replaces a shorter item's `input_ids`/`labels` with padded lists)",
    ),
    "collate-errors": (
        "D-11",
        "`collate_datums` raises on a valid input: a negative `pad_seq_len_divisible` with an odd longest length "
        "(3, -2 gives width 2) leaves its rows ragged and `torch.tensor` raises `ValueError`",
    ),
    "collate-padded": (
        "D-11",
        "`collate_datums` pads through `default_collater`, whose width `ceil(L / d) * d` is below the longest "
        "length for a negative `pad_seq_len_divisible` (longest 3, -2 gives 2): `torch.tensor` raises `ValueError`",
    ),
    "datum-construct": (
        "D-6",
        "`Datum.__post_init__` keeps the caller's `loss_fn_inputs` dict as its own and writes the "
        "converted tensors into it",
    ),
    "dcoll-fields": (
        "D-11",
        "`default_collater`'s width `ceil(L / d) * d` is below the longest length for a negative "
        "`pad_seq_len_divisible` (longest 3, -2 gives 2): the rows stay ragged and `torch.tensor` raises `ValueError`",
    ),
}

__all__ = [
    "BATCHSPEC_CAPABILITIES",
    "BATCHSPEC_SPEC_VERSION",
    "EXPECTED_DIFFERENCES",
    "Datum",
    "build_packed_sequence_metadata",
    "collate_datums",
    "default_collater",
    "get_unpad_data",
    "pack_features_for_thd",
    "packed_sequence_thd_collater",
]
