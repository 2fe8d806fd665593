"""Output formats: THD lengths, ``convert_batch_output``, and the exact key sets of each
route (SPEC.md, "``TrainingBatch`` fields", "``convert_text_batch``" and "Output formats").
Expected values are written by hand (the SPEC's worked examples D and D′)."""

from __future__ import annotations

import pytest

from conformance._asserts import Value, assert_batch_equal, assert_raises, assert_tensor_equal
from conformance._examples import EXAMPLE_A, EXAMPLE_ROWS, convert, long
from conformance._zephon import Contract

ALWAYS = {"input_ids", "labels", "position_ids", "padding_mask", "document_ids", "attention_document_ids"}
BATCHED = ALWAYS | {"_packed_seq_ids", "attention_mask"}
METADATA = {"packed_token_indices", "cu_seqlens", "max_seqlen"}
THD = ALWAYS | {"seq_lens", "seq_lens_padded", "qkv_format"}


@pytest.mark.requires("convert_text_batch", "thd")
@pytest.mark.clause("ctb-output-route", "thd-lengths", "thd-qkv-format", "tb-dtypes")
def test_example_d_thd(backend):
    """Example D: THD lengths; the other fields as in A; no mask, no metadata."""
    out = convert(backend, EXAMPLE_ROWS, Contract("document_ids", True), output_format="thd")
    expected = {key: EXAMPLE_A[key] for key in ALWAYS}
    expected["seq_lens"] = long([[3, 2, 2], [5, 3, -1000]])
    expected["seq_lens_padded"] = long([[3, 2, 3], [5, 3, -1000]])
    expected["qkv_format"] = "thd"
    assert_batch_equal(out, expected, clause="thd-lengths", call="Example D, output_format='thd'")
    assert set(out) == THD, f"keys {sorted(out)}, but should be {sorted(THD)} [ctb-output-route]"


@pytest.mark.requires("convert_text_batch", "thd", "xdoc")
@pytest.mark.clause("thd-lengths", "ctb-selected-ids")
def test_example_d_prime_thd_with_xdoc(backend):
    """Example D′: THD lengths come from the joined ids."""
    out = convert(backend, EXAMPLE_ROWS, output_format="thd", xdoc=True)
    assert_tensor_equal("seq_lens", out["seq_lens"], long([[7], [8]]), clause="thd-lengths", call="Example D′")
    assert_tensor_equal(
        "seq_lens_padded", out["seq_lens_padded"], long([[8], [8]]), clause="thd-lengths", call="Example D′"
    )


@pytest.mark.requires("convert_text_batch")
@pytest.mark.clause("tb-keys", "batched-metadata", "ctb-output-route")
@pytest.mark.parametrize("metadata", [False, True])
@pytest.mark.parametrize("mask_type", ["block_causal", "document_ids"])
def test_batched_key_set(backend, mask_type, metadata):
    """Batched output holds exactly the always-present, mask and (when asked) metadata keys."""
    out = convert(backend, EXAMPLE_ROWS, Contract(mask_type, metadata))
    want = BATCHED | (METADATA if metadata else set())
    assert set(out) == want, f"keys {sorted(out)}, but should be {sorted(want)} [tb-keys]"


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("batched-unchanged")
def test_convert_batch_output_batched_is_identity(backend):
    """ "batched" returns the same mapping with the same tensors."""
    ids = long([[1, 1, 2, 0]])
    batch = {"attention_document_ids": ids}
    out = backend.convert_batch_output(batch, "batched")
    assert out is batch and set(out) == {"attention_document_ids"} and out["attention_document_ids"] is ids, (
        f"convert_batch_output(batch, 'batched') changed the mapping to keys {sorted(out)} [batched-unchanged]"
    )


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("thd-lengths", "thd-qkv-format")
def test_convert_batch_output_thd_lengths(backend):
    """Runs of equal positive ids in stream order; padding joins the last run; -1000 fill."""
    ids = long([[1, 1, 2, 2, 2, 0, 0], [5, 5, 5, 5, 5, 5, 5], [1, 2, 3, 4, 5, 6, 0]])
    batch = {"attention_document_ids": ids}
    out = backend.convert_batch_output(batch, "thd")
    assert out is batch, "convert_batch_output must return the same mapping"
    expected = {
        "seq_lens": long([[2, 3, -1000, -1000, -1000, -1000], [7] + [-1000] * 5, [1, 1, 1, 1, 1, 1]]),
        "seq_lens_padded": long([[2, 5, -1000, -1000, -1000, -1000], [7] + [-1000] * 5, [1, 1, 1, 1, 1, 2]]),
        "qkv_format": "thd",
    }
    assert_batch_equal(out, expected, clause="thd-lengths", call=f"convert_batch_output({ids.tolist()}, 'thd')")
    assert_tensor_equal(
        "attention_document_ids",
        ids,
        long([[1, 1, 2, 2, 2, 0, 0], [5] * 7, [1, 2, 3, 4, 5, 6, 0]]),
        clause="thd-lengths",
        call="the input tensor must not change",
    )


THD_ERRORS = [
    ("left-padding", long([[0, 0, 1, 1, 1]]), (0,)),
    ("interior-exclusion", long([[1, 1, 0, 1, 1]]), (0,)),
    ("id-reappears", long([[1, 1, 1, 1], [1, 2, 1, 0]]), (1,)),
    ("empty-row", long([[1, 1, 0], [0, 0, 0]]), (1,)),
    ("negative-id", long([[1, 1, 1], [1, -1, 2]]), (1,)),
]


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("thd-errors")
@pytest.mark.parametrize("case", THD_ERRORS, ids=[c[0] for c in THD_ERRORS])
def test_convert_batch_output_thd_rejects(backend, case):
    """Ids that cannot be expressed as THD lengths raise ValueError naming the row."""
    _, ids, words = case
    assert_raises(
        ValueError, words, backend.convert_batch_output, {"attention_document_ids": ids}, "thd", clause="thd-errors"
    )


@pytest.mark.requires("convert_batch_output")
@pytest.mark.clause("types-output-format")
def test_convert_batch_output_unknown_format(backend):
    """Only "batched" and "thd" are formats."""
    assert_raises(
        ValueError,
        ("output_format", "batched", "thd", Value("bshd")),
        backend.convert_batch_output,
        {"attention_document_ids": long([[1]])},
        "bshd",
        clause="types-output-format",
    )
