"""The model-level checks' own machinery (conformance/model/): the documents it derives from the
records, the processor-style mRoPE numbering, the varlen inputs it reads from a batch's keys,
and the low-precision tolerance. The routes themselves run in the conformance runs (reference,
vectorized) and against the mutants."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from batchspec import reference
from batchspec.conformance.golden.case_values import stored_rows
from batchspec.conformance.helpers.sample_batches import Contract, packed_row, sample_batch
from batchspec.conformance.model import wiring
from batchspec.conformance.model.documents import documents, mrope_positions

EXAMPLE_A = stored_rows()  # SPEC.md's worked example A, from its golden case


def test_documents_and_their_targets_come_from_the_records():
    docs = documents(EXAMPLE_A, xdoc=False, mask_segment_starts=False)
    assert [(d.row, d.start, d.stop, d.tokens) for d in docs] == [
        (0, 0, 3, (11, 12, 13)),
        (0, 3, 5, (21, 22)),
        (0, 5, 7, (31, 32)),
        (1, 0, 5, (41, 42, 43, 44, 45)),
        (1, 5, 8, (51, 52, 53)),  # the row's last token is only a target: S = 8
    ]
    # a document's last token predicts the next document's first; the last real input's target is padding
    assert [d.targets for d in docs] == [(12, 13, 21), (22, 31), (32, None), (42, 43, 44, 45, 51), (52, 53, None)]
    masked = documents(EXAMPLE_A, xdoc=False, mask_segment_starts=True)
    assert [d.targets for d in masked][:2] == [(12, 13, None), (22, None)]
    joined = documents(EXAMPLE_A, xdoc=True, mask_segment_starts=True)
    assert [(d.start, d.stop) for d in joined] == [(0, 7), (0, 8)]
    assert joined[0].targets == (12, 13, None, 22, None, 32, None), "xdoc masks the original boundaries"


def test_mrope_positions_number_an_image_grid_as_a_qwen2_vl_processor():
    # 2 text tokens, a 1x2x3 image, 2 text tokens: text continues one past the largest coordinate
    positions = mrope_positions([(2,), (1, 2, 3), (2,)])
    assert positions.tolist() == [
        [0, 1, 2, 2, 2, 2, 2, 2, 5, 6],
        [0, 1, 2, 2, 2, 3, 3, 3, 5, 6],
        [0, 1, 2, 3, 4, 2, 3, 4, 5, 6],
    ]


def test_the_varlen_inputs_of_the_metadata_bundle_and_of_thd():
    batch = reference.convert_text_batch(sample_batch(EXAMPLE_A), Contract("document_ids", True), -100, False, False)
    index, cu = wiring.metadata_varlen_inputs(batch["packed_token_indices"], batch["cu_seqlens"])
    assert index.tolist() == [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15]  # row 0's pad slot 7 left out
    assert cu.dtype == torch.int32 and cu.tolist() == [0, 3, 5, 7, 12, 15]
    thd = reference.convert_text_batch(sample_batch(EXAMPLE_A), Contract(), -100, False, False, "thd")
    cu, cu_padded = wiring.thd_varlen_inputs(thd["seq_lens"], thd["seq_lens_padded"], 8)
    assert cu.tolist() == [0, 3, 5, 7, 12, 15] and cu_padded.tolist() == [0, 3, 5, 8, 13, 16]
    with pytest.raises(ValueError, match="packed_token_indices"):
        wiring.metadata_varlen_inputs(batch["packed_token_indices"] + 8, batch["cu_seqlens"])
    with pytest.raises(ValueError, match="seq_lens_padded"):
        wiring.thd_varlen_inputs(thd["seq_lens"], thd["seq_lens_padded"], 9)


def test_a_row_whose_positions_jump_inside_a_document_is_refused_by_the_harness():
    jump = [packed_row([[5, 6, 7]], 1)]
    jump[0] = type(jump[0])(jump[0].tokens, (0, 1, 5, 0), 1)
    with pytest.raises(ValueError, match="positions"):
        documents(jump, xdoc=False, mask_segment_starts=False)
