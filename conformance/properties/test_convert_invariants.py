"""Hypothesis invariants of ``convert_text_batch`` (SPEC.md, "3. ``TrainingBatch`` fields" and
"4. ``convert_text_batch``") on generated inputs: shapes, shifted labels, padding, ids,
masks, no input mutation, rows beyond int16 subdocuments, and the differential test against
``reference`` on every route family (each test names its clauses).

Inputs come from ``batchspec.conformance.helpers.strategies``; expected values are computed in
plain Python (``batchspec.conformance.helpers.invariants``) or, for the differential test only,
by ``reference``. The code under test is reached only through the ``backend`` fixture.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec import reference
from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import check, valid_input
from batchspec.conformance.helpers.fields import assert_training_batch_equal, label_targets
from batchspec.conformance.helpers.invariants import (
    CONVERTED_BATCH_CLAUSES,
    check_converted_batch,
)
from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.sample_batches import (
    Contract,
    assert_batch_unchanged,
    packed_row,
    payload_form,
    sample_batch,
    with_token_field,
)
from batchspec.conformance.helpers.storage import input_state


@pytest.mark.clause(*CONVERTED_BATCH_CLAUSES)
@pytest.mark.requires("convert_text_batch")
@given(data=st.data())
def test_converted_batch_invariants(backend, data):
    case = data.draw(cs.packed_batches(), label="case")
    with valid_input(
        cs.describe_call(
            case.rows,
            case.contract,
            ignore_index=case.ignore_index,
            mask_segment_starts=case.mask_segment_starts,
            xdoc=False,
        )
    ):
        out = backend.convert_text_batch(
            sample_batch(case.rows), case.contract, case.ignore_index, case.mask_segment_starts, False
        )
    check_converted_batch(
        out,
        case.rows,
        ignore_index=case.ignore_index,
        mask_segment_starts=case.mask_segment_starts,
        contract=case.contract,
        call=cs.describe_call(
            case.rows,
            case.contract,
            ignore_index=case.ignore_index,
            mask_segment_starts=case.mask_segment_starts,
            xdoc=False,
        ),
    )


@pytest.mark.clause("ctb-no-mutation", "ctb-input-errors")
@pytest.mark.requires("convert_text_batch")
@given(data=st.data())
def test_convert_text_batch_does_not_mutate_input(backend, data):
    """On every route and option combination the backend declares (``draw_route``: both
    formats, both mask types, metadata, xdoc, ``pad_to_length`` over rows that carry Zephon's
    packing metadata) and every payload form, the SampleBatch keeps its records, payloads and
    meta, by identity and by value, also after the returned tensors are overwritten."""
    case = data.draw(cs.packed_batches(), label="case")
    route = cs.draw_route(data, backend, case)
    form = data.draw(st.sampled_from(("lists", "numpy", "tensor")), label="payload_form")
    field, decoys = cs.draw_token_fields(data)
    call = f"{cs.describe_route_call(case, route)} with payloads as {form}, the tokens under {field!r}, decoys {list(decoys)}"
    batch = payload_form(with_token_field(sample_batch(case.rows), field, decoys), form)
    before = input_state(batch, "sample_batch")

    with valid_input(call):
        out = backend.convert_text_batch(batch, *cs.call_arguments(case, route))
    assert_batch_unchanged(before, batch, what="by the call", call=call)

    # The outputs share no storage with the input: overwrite them all in place.
    for value in out.values():
        if isinstance(value, torch.Tensor):
            value.fill_(True if value.dtype == torch.bool else -12345)
    assert_batch_unchanged(before, batch, what="after overwriting the returned tensors in place", call=call)


# What the reference comparison checks; a differing field is blamed on its own clauses among these.
CONVERT_MATCH_CLAUSES = (*CONVERTED_BATCH_CLAUSES, "tb-keys", "ctb-token-field")


# Each route family: the options it fixes, the profile it needs, the clauses of its own keys.
MATCH_ROUTES = {
    "batched": (dict(xdoc=False, output_format="batched", unpacked=False), (), ()),
    "xdoc": (dict(xdoc=True, output_format="batched", unpacked=False), ("xdoc",), ("ctb-xdoc", "ctb-selected-ids")),
    "thd": (
        dict(xdoc=False, output_format="thd", unpacked=False),
        ("thd",),
        ("ctb-output-route", "thd-lengths", "thd-qkv-format"),
    ),
    "unpacked": (
        dict(xdoc=False, output_format="batched", unpacked=True),
        ("unpacked",),
        ("unpacked-padding", "unpacked-same-route"),
    ),
}


@pytest.mark.requires("convert_text_batch")
@pytest.mark.parametrize(
    "family",
    [
        pytest.param(
            name, marks=[pytest.mark.requires(*needs), pytest.mark.clause(*CONVERT_MATCH_CLAUSES, *own)], id=name
        )
        for name, (_, needs, own) in MATCH_ROUTES.items()
    ],
)
@given(data=st.data())
def test_convert_text_batch_matches_reference(backend, family, data):
    """On each route family (batched packed rows, xdoc, THD, the unpacked route over rows that
    carry Zephon's packing metadata; both mask types, metadata on and off), the backend's batch
    equals the reference's, field by field; a differing field is blamed on its own clauses
    (SPEC's field table, under the call's ``xdoc`` / ``unpacked`` conditions), labels per
    element."""
    case = data.draw(cs.packed_batches(), label="case")
    route = cs.draw_route(data, backend, case, **MATCH_ROUTES[family][0])
    field, decoys = cs.draw_token_fields(data)
    args = cs.call_arguments(case, route)
    with valid_input(cs.describe_route_call(case, route)):
        out = backend.convert_text_batch(with_token_field(sample_batch(case.rows), field, decoys), *args)
    expected = reference.convert_text_batch(with_token_field(sample_batch(case.rows), field, decoys), *args)
    got_ids = out.get("input_ids") if isinstance(out, dict) else None
    if decoys and isinstance(got_ids, torch.Tensor) and got_ids.shape == expected["input_ids"].shape:
        # a decoy holds every token with its lowest bit flipped: input_ids read from one is the wrong field
        # (before any slots pad_to_length appends, which hold pad_token_id)
        given, want = (
            got_ids[:, : len(case.rows[0].tokens) - 1],
            expected["input_ids"][:, : len(case.rows[0].tokens) - 1],
        )
        picked = not torch.equal(given, want) and torch.equal(given, want ^ 1)
        check(
            not picked,
            f"input_ids={got_ids.tolist()} are a decoy field's values, but should be {field!r}'s, the first "
            "candidate present",
            clause="ctb-token-field",
            call=f"{cs.describe_route_call(case, route)}, decoys {list(decoys)}",
        )
    targets = label_targets(case.rows, case.ignore_index, case.mask_segment_starts, route.pad_to_length)
    conditions = {"xdoc"} if route.xdoc else set()
    conditions |= {"unpacked"} if route.pad_to_length is not None else set()
    assert_training_batch_equal(
        out,
        expected,
        clause=", ".join(CONVERT_MATCH_CLAUSES),
        call=f"{cs.describe_route_call(case, route)} with the tokens under {field!r}, decoys {list(decoys)} (reference)",
        targets=targets,
        conditions=conditions,
    )


# One row of 32770 one-token documents and a pad token: ids 1..32770 at the S = 32770 inputs,
# past int16's 32767 (the reference converts it in about 1.5 s; a block-causal mask would be 1 GB).
BEYOND_INT16_DOCUMENTS = 32770


@pytest.mark.clause(
    "ctb-document-ids",
    "ctb-attention-ids",
    "batched-packed-seq-ids",
    "batched-document-ids-mask",
    "batched-metadata",
    "ctb-input-errors",
)
@pytest.mark.requires("convert_text_batch")
def test_converted_batch_beyond_int16_subdocuments(backend):
    """A row of more subdocuments than int16 counts (``BEYOND_INT16_DOCUMENTS``, each one
    token, then one pad token), converted with the ``"document_ids"`` mask and, when the backend
    declares ``packed_metadata``, the metadata: every field is ``check_converted_batch``'s
    (ids 1..32770, ``cu_seqlens`` ``[1, 32771]``)."""
    rows = [packed_row([[7]] * BEYOND_INT16_DOCUMENTS, 1, pad_token_id=cs.PAD_TOKEN_ID)]
    contract = cs.usable_contract(Contract("document_ids", True), backend)
    call = (
        f"convert_text_batch(sample_batch([packed_row([[7]] * {BEYOND_INT16_DOCUMENTS}, padding=1)]), {contract!r}, "
        "ignore_index=-100, mask_segment_starts=False, allow_cross_document_attention=False)"
    )
    with valid_input(call):
        out = backend.convert_text_batch(sample_batch(rows), contract, IGNORE_INDEX, False, False)
    check_converted_batch(out, rows, ignore_index=IGNORE_INDEX, mask_segment_starts=False, contract=contract, call=call)
