"""Property tests of the contract's invariants on generated inputs: shapes, shifted labels,
padding, what xdoc leaves untouched, THD length sums, metadata consistency, no input mutation
(each test names its clauses).

Inputs come from ``batchspec.conformance.helpers.strategies``; expected values are computed in plain Python
(``batchspec.conformance.helpers.invariants``) or, for the differential test only, by ``reference``. The code
under test is reached only through the ``backend`` fixture.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batchspec import reference
from batchspec.conformance.golden.blame import binary_mask, blame
from batchspec.conformance.helpers import strategies as cs
from batchspec.conformance.helpers.asserts import ClauseFailure, assert_tensor_equal, check, valid_input
from batchspec.conformance.helpers.fields import assert_training_batch_equal, label_targets
from batchspec.conformance.helpers.inputs import (
    Contract,
    assert_batch_unchanged,
    batch_state,
    packed_row,
    payload_form,
    sample_batch,
    with_token_field,
)
from batchspec.conformance.helpers.invariants import (
    check_converted_batch,
    expected_packed_metadata,
    expected_thd_lengths,
    expected_unpad_data,
)
from batchspec.conformance.helpers.literals import IGNORE_INDEX


@pytest.mark.clause(
    "tb-shapes",
    "tb-dtypes",
    "ctb-shift",
    "ctb-positions",
    "ctb-padding-labels",
    "ctb-padding-mask",
    "ctb-cross-document-targets",
    "ctb-segment-starts",
    "ctb-document-ids",
    "ctb-attention-ids",
    "ctb-ignore-index",
    "batched-packed-seq-ids",
    "batched-block-causal",
    "batched-document-ids-mask",
    "batched-metadata",
    "ctb-input-errors",
)
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


def _describe(case: cs.PackedBatch, route: cs.Route) -> str:
    return cs.describe_call(
        case.rows,
        route.contract,
        ignore_index=case.ignore_index,
        mask_segment_starts=case.mask_segment_starts,
        xdoc=route.xdoc,
        output_format=route.output_format,
        pad_to_length=route.pad_to_length,
        pad_token_id=route.pad_token_id,
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
    call = f"{_describe(case, route)} with payloads as {form}, the tokens under {field!r}, decoys {list(decoys)}"
    batch = payload_form(with_token_field(sample_batch(case.rows), field, decoys), form)
    before = batch_state(batch)

    with valid_input(call):
        out = backend.convert_text_batch(batch, *cs.call_arguments(case, route))
    assert_batch_unchanged(before, batch, what="by the call", call=call)

    # The outputs share no storage with the input: overwrite them all in place.
    for value in out.values():
        if isinstance(value, torch.Tensor):
            value.fill_(True if value.dtype == torch.bool else -12345)
    assert_batch_unchanged(before, batch, what="after overwriting the returned tensors in place", call=call)


# What the reference comparison checks; a differing field is blamed on its own clauses among these.
CONVERT_MATCH_CLAUSES = (
    "ctb-input-errors",
    "tb-shapes",
    "tb-dtypes",
    "tb-keys",
    "ctb-token-field",
    "ctb-shift",
    "ctb-positions",
    "ctb-padding-labels",
    "ctb-padding-mask",
    "ctb-cross-document-targets",
    "ctb-segment-starts",
    "ctb-document-ids",
    "ctb-attention-ids",
    "ctb-ignore-index",
    "batched-packed-seq-ids",
    "batched-block-causal",
    "batched-document-ids-mask",
    "batched-metadata",
)


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
    with valid_input(_describe(case, route)):
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
            f"candidate present [ctb-token-field: {_describe(case, route)}, decoys {list(decoys)}]",
            clause="ctb-token-field",
        )
    targets = label_targets(case.rows, case.ignore_index, case.mask_segment_starts, route.pad_to_length)
    conditions = {"xdoc"} if route.xdoc else set()
    conditions |= {"unpacked"} if route.pad_to_length is not None else set()
    assert_training_batch_equal(
        out,
        expected,
        clause=", ".join(CONVERT_MATCH_CLAUSES),
        call=f"{_describe(case, route)} with the tokens under {field!r}, decoys {list(decoys)} (reference)",
        targets=targets,
        conditions=conditions,
    )


# The clauses the metadata properties blame a differing key on (narrowing ``OUTPUT_CLAUSES``):
# the key's own clause, and for get_unpad_data's spans the route the whole mask takes.
META_BLAME = ("meta-indices", "meta-cu-seqlens", "meta-max-seqlen")
UNPAD_BLAME = ("unpad-binary", "unpad-indexed", "unpad-outputs")


def _assert_metadata_equal(function: str, out: dict, want: dict, mask: torch.Tensor, call: str) -> None:
    """Each key of ``want`` (tensors, then the Python ``int`` ``max_seqlen``) equals ``out``'s,
    a differing key blamed on its own clauses (``blame``: ``OUTPUT_CLAUSES`` of ``function``,
    narrowed to ``META_BLAME`` / ``UNPAD_BLAME``; get_unpad_data's ``cu_seqlens`` on the route
    ``mask`` takes)."""
    __tracebackhide__ = True
    cited = META_BLAME if function == "build_packed_sequence_metadata" else UNPAD_BLAME
    for key, value in want.items():
        got = out.get(key)
        clause = ", ".join(blame(function, key, got, value, cited, {"mask": mask}))
        if isinstance(value, torch.Tensor):
            assert_tensor_equal(key, got, value, clause=clause, call=call)
        elif type(got) is not int or got != value:
            raise ClauseFailure(
                f"{key}={got!r} ({type(got).__name__}), but should be int {value} [{clause}: {call}]", clause
            )


@pytest.mark.clause("meta-indices", "meta-cu-seqlens", "meta-max-seqlen", "unpad-precondition")
@pytest.mark.requires("packed_metadata")
@given(data=st.data())
def test_packed_metadata_invariants(backend, data):
    """On every ``id_masks`` mask (ids at the int8 / int16 edges, rows of more than 127 ids,
    negative entries, binary rows beside indexed ones) the three keys equal
    ``expected_packed_metadata``'s, whose route is decided per row [meta-cu-seqlens] and which
    counts a negative entry as nonzero [unpad-precondition]; the mask is not modified."""
    mask = data.draw(cs.id_masks(), label="mask")
    call = f"build_packed_sequence_metadata(torch.tensor({mask.tolist()}, dtype={mask.dtype}))"
    original = mask.clone()
    want = expected_packed_metadata(mask.to(torch.int64).tolist())
    out = backend.build_packed_sequence_metadata(mask)
    _assert_metadata_equal("build_packed_sequence_metadata", out, want, original, call)
    assert_tensor_equal("mask (input, after the call)", mask, original, clause="meta-indices", call=call)


@pytest.mark.clause("unpad-binary", "unpad-indexed", "unpad-outputs", "unpad-precondition")
@pytest.mark.requires("unpad_data")
@given(data=st.data())
def test_unpad_data_invariants(backend, data):
    """On every ``id_masks`` mask the outputs equal ``expected_unpad_data``'s on the route the
    whole mask takes (binary when bool or its largest value is <= 1, so a row's negative
    entries count in its span; indexed otherwise, where only ids 1..max are spans), negative
    entries in ``indices`` [unpad-precondition]; ``cu_seqlens`` is blamed on that route, the
    rest on [unpad-outputs]."""
    mask = data.draw(cs.id_masks(), label="mask")
    call = f"get_unpad_data(torch.tensor({mask.tolist()}, dtype={mask.dtype}))"
    original = mask.clone()
    # the expected outputs come from the mask as drawn, before the backend sees it
    indices, cu_seqlens, max_seqlen = expected_unpad_data(mask.to(torch.int64).tolist(), binary=binary_mask(mask))
    out = backend.get_unpad_data(mask)
    if not isinstance(out, tuple) or len(out) != 3:
        raise ClauseFailure(
            f"get_unpad_data returned {type(out).__name__}, but should return a 3-tuple [unpad-outputs: {call}]",
            "unpad-outputs",
        )
    want = {"indices": indices, "cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen}
    _assert_metadata_equal("get_unpad_data", dict(zip(want, out)), want, original, call)


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


def _id_cells(draw) -> st.SearchStrategy[int]:
    """Ids 0..6, or in one draw in four also ids at the narrowing edges (``NARROW_EDGE_IDS``
    and, when ``int16``, ``INT16_EDGE_IDS``), where an id narrowed to int8 or int16 wraps."""
    if draw(st.integers(0, 3), label="edge ids") != 0:
        return st.integers(0, 6)
    return st.one_of(st.integers(0, 6), st.sampled_from(cs.NARROW_EDGE_IDS + cs.INT16_EDGE_IDS))


@st.composite
def _adapt_inputs(draw):
    """Random int64 ``document_ids`` (any ids >= 0, not renumbered; sometimes ids at the
    int8 / int16 edges, ``_id_cells``) and optional eligibility."""
    batch_size = draw(st.integers(1, cs.MAX_BATCH), label="B")
    sequence_length = draw(st.integers(1, cs.MAX_LEN), label="S")
    cell = _id_cells(draw)
    ids = draw(
        st.lists(
            st.lists(cell, min_size=sequence_length, max_size=sequence_length), min_size=batch_size, max_size=batch_size
        ),
        label="document_ids",
    )
    eligible = draw(
        st.none()
        | st.lists(
            st.lists(st.booleans(), min_size=sequence_length, max_size=sequence_length),
            min_size=batch_size,
            max_size=batch_size,
        ),
        label="attention_eligibility",
    )
    return ids, eligible


@pytest.mark.clause("adapt-attention-ids", "adapt-no-mutation")
@pytest.mark.requires("adapt_model_inputs")
@given(data=st.data())
def test_adapt_model_inputs_invariants(backend, data):
    ids, eligible = data.draw(_adapt_inputs(), label="inputs")
    call = f"adapt_model_inputs({{'document_ids': torch.tensor({ids}), ...}}, attention_eligibility={eligible})"
    document_ids = torch.tensor(ids, dtype=torch.int64)
    batch = {
        "document_ids": document_ids,
        "input_ids": torch.arange(document_ids.numel(), dtype=torch.int64).reshape(document_ids.shape),
        "padding_mask": document_ids == 0,
    }
    eligibility = None if eligible is None else torch.tensor(eligible, dtype=torch.bool)
    entries = dict(batch)
    clones = {key: value.clone() for key, value in batch.items()}
    eligibility_clone = None if eligibility is None else eligibility.clone()

    result = (
        backend.adapt_model_inputs(batch, eligibility) if eligibility is not None else backend.adapt_model_inputs(batch)
    )

    if result is not batch:
        raise ClauseFailure(
            f"returned {type(result).__name__} id {id(result)}, but should return the same mapping [adapt-attention-ids: {call}]",
            "adapt-attention-ids",
        )
    expected = [
        [ids[b][i] if eligible is None or eligible[b][i] else 0 for i in range(len(ids[b]))] for b in range(len(ids))
    ]
    assert_tensor_equal(
        "attention_document_ids",
        result.get("attention_document_ids"),
        torch.tensor(expected, dtype=torch.int64),
        clause="adapt-attention-ids",
        call=call,
    )
    if result["attention_document_ids"].untyped_storage().data_ptr() == document_ids.untyped_storage().data_ptr():
        raise ClauseFailure(
            f"attention_document_ids shares storage with document_ids, but should be new [adapt-attention-ids: {call}]",
            "adapt-attention-ids",
        )

    # Only an entry is added; every tensor that was there is the same object, unmodified.
    if sorted(result) != sorted([*entries, "attention_document_ids"]):
        raise ClauseFailure(
            f"keys {sorted(result)}, but should be {sorted([*entries, 'attention_document_ids'])} [adapt-no-mutation: {call}]",
            "adapt-no-mutation",
        )
    for key, value in entries.items():
        if result[key] is not value:
            raise ClauseFailure(
                f"batch[{key!r}] was replaced, but should be the same tensor [adapt-no-mutation: {call}]",
                "adapt-no-mutation",
            )
        assert_tensor_equal(
            f"batch[{key!r}] (after the call)", value, clones[key], clause="adapt-no-mutation", call=call
        )
    if eligibility is not None:
        assert_tensor_equal(
            "attention_eligibility (after the call)",
            eligibility,
            eligibility_clone,
            clause="adapt-no-mutation",
            call=call,
        )


@st.composite
def _xdoc_inputs(draw):
    """An ``enable_xdoc_attention`` batch beyond what ``convert_text_batch`` builds: int64
    ``document_ids`` >= 0 in any order along the row (decreasing, reappearing, gapped ids),
    ``attention_document_ids`` that are the document ids, 0 (a processor exclusion) or negative,
    and positions >= 0, text ``[B, S]`` or mRoPE ``[3, B, S]``. In one batch in eight (then
    B <= 2) ids also take the int8 edges ``NARROW_EDGE_IDS`` (127 | 128, 255 | 256; the
    reference walks every id 1..max of a row, so never the int16 ones)."""
    edges = draw(st.integers(0, 7), label="edge ids") == 0
    batch_size = draw(st.integers(1, 2 if edges else cs.MAX_BATCH), label="B")
    sequence_length = draw(st.integers(1, cs.MAX_LEN), label="S")

    def grid(cell):
        row = st.lists(cell, min_size=sequence_length, max_size=sequence_length)
        return st.lists(row, min_size=batch_size, max_size=batch_size)

    cell = st.one_of(st.integers(0, 6), st.sampled_from(cs.NARROW_EDGE_IDS)) if edges else st.integers(0, 6)
    ids = draw(grid(cell), label="document_ids")
    kinds = draw(grid(st.sampled_from(("same", "same", "same", "zero", "negative"))), label="attention")
    attention = [
        [i if k == "same" else 0 if k == "zero" else -1 - i for i, k in zip(id_row, kind_row)]
        for id_row, kind_row in zip(ids, kinds)
    ]
    axes = draw(st.sampled_from((None, 3)), label="axes")
    shape = (batch_size, sequence_length) if axes is None else (axes, batch_size, sequence_length)
    positions = draw(
        st.lists(st.integers(0, 12), min_size=torch.Size(shape).numel(), max_size=torch.Size(shape).numel()),
        label="positions",
    )
    return ids, attention, positions, shape


@pytest.mark.clause("xdoc-attention-ids", "xdoc-positions", "xdoc-untouched")
@pytest.mark.requires("xdoc")
@given(data=st.data())
def test_enable_xdoc_attention_matches_reference_on_any_ids(backend, data):
    """On ids in any order and with negative attention ids (SPEC defines both), the backend's
    ``enable_xdoc_attention`` gives the reference's attention ids [xdoc-attention-ids] and
    positions [xdoc-positions], and leaves every other field, and every input tensor, as it was
    [xdoc-untouched]."""
    ids, attention, positions, shape = data.draw(_xdoc_inputs(), label="inputs")
    call = (
        f"enable_xdoc_attention({{'document_ids': torch.tensor({ids}), 'attention_document_ids': "
        f"torch.tensor({attention}), 'position_ids': torch.tensor({positions}).reshape{shape}, ...}}, Contract())"
    )

    def batch():
        document_ids = torch.tensor(ids, dtype=torch.int64)
        return {
            "input_ids": torch.arange(document_ids.numel(), dtype=torch.int64).reshape(document_ids.shape),
            "labels": torch.full(document_ids.shape, -100, dtype=torch.int64),
            "padding_mask": document_ids == 0,
            "document_ids": document_ids,
            "attention_document_ids": torch.tensor(attention, dtype=torch.int64),
            "position_ids": torch.tensor(positions, dtype=torch.int64).reshape(shape),
        }

    given = batch()
    inputs = dict(given)
    clones = {key: value.clone() for key, value in given.items()}
    out = backend.enable_xdoc_attention(given, Contract())
    expected = reference.enable_xdoc_attention(batch(), Contract())
    for key, clause in (("attention_document_ids", "xdoc-attention-ids"), ("position_ids", "xdoc-positions")):
        assert_tensor_equal(key, out.get(key), expected[key], clause=clause, call=call)
    for key in ("input_ids", "labels", "padding_mask", "document_ids"):
        assert_tensor_equal(key, out.get(key), clones[key], clause="xdoc-untouched", call=call)
    for key, value in inputs.items():
        assert_tensor_equal(
            f"input {key} (after the call)",
            value,
            clones[key],
            clause="xdoc-untouched",
            call=f"{call}: modified in place",
        )


@st.composite
def _thd_ids(draw):
    """Selected ids ``[B, S]`` as ``convert_batch_output(batch, "thd")`` accepts them: per row,
    stretches of equal positive ids in stream order, each id once ([thd-errors] rejects one that
    reappears), then trailing zeros, at least one positive id. Ids count up from 1 and now and
    then jump to the narrowing edges (``NARROW_EDGE_IDS``, ``INT16_EDGE_IDS``: a jump, not a
    loop, costs nothing here). About one batch in eight has many subdocuments: B <= 2, S in
    131..MANY_LEN, stretches of mostly one token, more than 127 in a row."""
    many = draw(st.integers(0, 7), label="many subdocuments") == 0
    if many:
        batch_size = draw(st.integers(1, 2), label="B")
        sequence_length = draw(st.integers(131, cs.MANY_LEN), label="S")
        stretch = st.sampled_from((1, 1, 1, 1, 1, 1, 2))
    else:
        batch_size = draw(st.integers(1, cs.MAX_BATCH), label="B")
        sequence_length = draw(st.integers(1, cs.MAX_LEN), label="S")
        stretch = st.integers(1, 4)
    rows = []
    for b in range(batch_size):
        real = draw(
            st.sampled_from((sequence_length, sequence_length - 3)) if many else st.integers(1, sequence_length)
        )
        row, current = [], 0
        while len(row) < real:
            current += 1
            if not many and draw(st.integers(0, 3), label="jump") == 0:
                current = max(current, draw(st.sampled_from(cs.NARROW_EDGE_IDS + cs.INT16_EDGE_IDS), label="edge"))
            row.extend([current] * min(draw(stretch, label=f"stretch[{b}]"), real - len(row)))
        rows.append(row + [0] * (sequence_length - real))
    return rows


@pytest.mark.clause("thd-lengths", "thd-qkv-format")
@pytest.mark.requires("convert_batch_output")
@given(data=st.data())
def test_convert_batch_output_thd_lengths_are_the_stretches(backend, data):
    """``convert_batch_output(batch, "thd")`` on selected ids of many subdocuments or ids at the
    int8 / int16 edges (``_thd_ids``): ``seq_lens`` and ``seq_lens_padded`` are
    ``expected_thd_lengths``'s (the stretches of equal positive ids, the trailing zeros added to
    the last one) [thd-lengths], and ``qkv_format`` is ``"thd"`` [thd-qkv-format]."""
    ids = data.draw(_thd_ids(), label="ids")
    call = f"convert_batch_output({{'document_ids': torch.tensor({ids}), 'attention_document_ids': (the same)}}, 'thd')"
    selected = torch.tensor(ids, dtype=torch.int64)
    out = backend.convert_batch_output({"document_ids": selected, "attention_document_ids": selected.clone()}, "thd")
    seq_lens, seq_lens_padded = expected_thd_lengths(ids)
    assert_tensor_equal("seq_lens", out.get("seq_lens"), seq_lens, clause="thd-lengths", call=call)
    assert_tensor_equal("seq_lens_padded", out.get("seq_lens_padded"), seq_lens_padded, clause="thd-lengths", call=call)
    check(
        out.get("qkv_format") == "thd",
        f"qkv_format={out.get('qkv_format')!r}, but should be 'thd' [thd-qkv-format: {call}]",
        clause="thd-qkv-format",
    )
