"""Golden cases for SPEC.md's "``adapt_model_inputs``" and "``enable_xdoc_attention``" on tensor
mappings: ``adapt_model_inputs`` and ``enable_xdoc_attention`` (text and mRoPE).
Canon literals are written by hand from the clauses; generated cases are seeded random
mappings whose expected values come from the reference.
"""

from __future__ import annotations

import random

import torch

from batchspec.conformance.golden.api import Case, Shape, bools, long, random_run_ids

F, T = False, True
IDS = long([[1, 1, 1, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]])
POS = long([[0, 1, 2, 0, 1, 0, 1, 0], [0, 1, 2, 3, 4, 0, 1, 2]])
PAD = bools([[F] * 7 + [T], [F] * 8])


def _xdoc(
    name,
    batch,
    expected=None,
    error=None,
    clauses=("xdoc-positions", "xdoc-attention-ids", "xdoc-untouched"),
    contract=None,
    description="",
):
    return Case(
        name=f"test_xdoc_{name}",
        clauses=clauses,
        description=description or name.replace("_", " "),
        function="enable_xdoc_attention",
        inputs={"batch": batch},
        options={} if contract is None else {"contract": contract},
        expected=expected,
        error=error,
    )


def case_adapt():
    base = {"document_ids": IDS, "position_ids": POS}
    elig = bools([[T, T, F, T, T, T, T, T], [T] * 8])
    # (name, inputs, error type, facts, the [adapt-errors] item)
    bad = [
        ("missing_document_ids", {"batch": {"position_ids": POS}}, "ValueError", ("document_ids",), 1),
        ("int32_document_ids", {"batch": {"document_ids": IDS.to(torch.int32)}}, "TypeError", ("document_ids",), 2),
        ("1d_document_ids", {"batch": {"document_ids": IDS[0]}}, "ValueError", ("document_ids",), 3),
        (
            "eligibility_not_bool",
            {"batch": base, "attention_eligibility": IDS},
            "TypeError",
            ("attention_eligibility",),
            4,
        ),
        (
            "eligibility_shape",
            {"batch": base, "attention_eligibility": bools([[T] * 8])},
            "ValueError",
            ("attention_eligibility", Shape(2, 8), Shape(1, 8)),
            5,
        ),
    ]
    return [
        Case(
            name="test_adapt_without_eligibility",
            clauses=("adapt-attention-ids", "adapt-no-mutation"),
            description="no eligibility: attention_document_ids equal document_ids",
            function="adapt_model_inputs",
            inputs={"batch": base},
            expected={**base, "attention_document_ids": IDS},
            keys=("document_ids", "position_ids", "attention_document_ids"),
        ),
        Case(
            name="test_adapt_with_eligibility",
            clauses=("adapt-attention-ids", "adapt-no-mutation"),
            description="an ineligible token gets id 0; no id is renumbered",
            function="adapt_model_inputs",
            inputs={"batch": base, "attention_eligibility": elig},
            expected={
                "attention_document_ids": long([[1, 1, 0, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]]),
                "document_ids": IDS,
            },
        ),
    ] + [
        Case(
            name=f"test_adapt_rejects_{n}",
            clauses=("adapt-errors", f"adapt-errors.{item}"),
            description=f"adapt_model_inputs: {n}",
            function="adapt_model_inputs",
            inputs=i,
            error=(k, w),
        )
        for n, i, k, w, item in bad
    ]


def case_xdoc_text():
    batch = {"document_ids": IDS, "attention_document_ids": IDS, "position_ids": POS, "padding_mask": PAD}
    joined = long([[1, 1, 1, 1, 1, 1, 1, 0], [1] * 8])
    expected = {
        "position_ids": long([[0, 1, 2, 3, 4, 5, 6, 0], [0, 1, 2, 3, 4, 5, 6, 7]]),
        "attention_document_ids": joined,
        "document_ids": IDS,
        "padding_mask": PAD,
    }
    excluded = long([[1, 1, 0, 2, 2, 3, 3, 0], [1, 1, 1, 1, 1, 2, 2, 2]])
    return [
        _xdoc("example_c_text", batch, expected, description="Example C on the mapping: continuous positions"),
        _xdoc(
            "document_ids_contract",
            batch,
            expected,
            clauses=("xdoc-contract",),
            contract={"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True},
            description="both mask types give the same output",
        ),
        _xdoc(
            "bound_not_reached",
            batch,
            expected,
            clauses=("xdoc-contract",),
            contract={"max_sequence_length": 8},
            description="max_sequence_length 8: largest translated position 7 is allowed",
        ),
        _xdoc(
            "bound_reached",
            batch,
            error=("ValueError", (7, "max_sequence_length")),
            clauses=("xdoc-contract",),
            contract={"max_sequence_length": 7},
            description="max_sequence_length 7: position 7 (the only one >= 7) raises, naming both values (7, 7)",
        ),
        _xdoc(
            "exclusion_stays_excluded",
            {**batch, "attention_document_ids": excluded},
            {
                "attention_document_ids": long([[1, 1, 0, 1, 1, 1, 1, 0], [1] * 8]),
                "position_ids": expected["position_ids"],
            },
            description="a processor exclusion (id 0) stays 0; positions follow document_ids",
        ),
    ]


def case_xdoc_mrope():
    pos = long([[[0, 1, 2, 0, 1, 0]], [[0, 3, 5, 0, 2, 0]], [[0, 0, 0, 0, 4, 0]]])
    ids = long([[1, 1, 1, 2, 2, 0]])
    return _xdoc(
        "mrope_offset_over_all_axes",
        {"document_ids": ids, "attention_document_ids": ids, "position_ids": pos},
        {
            "position_ids": long([[[0, 1, 2, 6, 7, 0]], [[0, 3, 5, 6, 8, 0]], [[0, 0, 0, 6, 10, 0]]]),
            "attention_document_ids": long([[1, 1, 1, 1, 1, 0]]),
        },
        description="A16: subdocument 2's offset is 1 + the largest coordinate of 1 over all axes (5)",
    )


def case_xdoc_errors():
    ok = {"document_ids": IDS, "attention_document_ids": IDS, "position_ids": POS}
    # (name, batch, error type, facts, the [xdoc-errors] item)
    bad = [
        (
            "missing_attention_ids",
            {"document_ids": IDS, "position_ids": POS},
            "ValueError",
            ("attention_document_ids",),
            1,
        ),
        (
            "missing_position_ids",
            {"document_ids": IDS, "attention_document_ids": IDS},
            "ValueError",
            ("position_ids",),
            1,
        ),
        ("int32_positions", {**ok, "position_ids": POS.to(torch.int32)}, "TypeError", ("position_ids",), 2),
        (
            "int32_attention_ids",
            {**ok, "attention_document_ids": IDS.to(torch.int32)},
            "TypeError",
            ("attention_document_ids",),
            2,
        ),
        (
            "ids_shape_mismatch",
            {**ok, "attention_document_ids": IDS[:1]},
            "ValueError",
            ("attention_document_ids",),
            3,
        ),
        ("positions_shape", {**ok, "position_ids": POS[:, :4]}, "ValueError", ("position_ids",), 3),
        # all three 1-D and of one shape: only document_ids is not 2-D, and it is the field named
        ("1d_document_ids", {k: v[0] for k, v in ok.items()}, "ValueError", ("document_ids",), 3),
        ("negative_position", {**ok, "position_ids": POS - 1}, "ValueError", ("position_ids",), 4),
    ]
    return [
        _xdoc(f"rejects_{n}", b, error=(k, w), clauses=("xdoc-errors", f"xdoc-errors.{item}"))
        for n, b, k, w, item in bad
    ]


def _positions(ids: list[int]) -> list[int]:
    out, last, k = [], None, 0
    for i in ids:
        k = 0 if i != last else k + 1
        out.append(k)
        last = i
    return out


def case_generated_mrope():
    rng = random.Random(20260207)
    cases = []
    for i in range(8):
        batch_size, width, axes = rng.choice([(1, 1), (1, 6), (2, 5), (3, 4)]), None, rng.choice([1, 3])
        batch_size, width = batch_size
        ids = [random_run_ids(rng, width) for _ in range(batch_size)]
        pos = [_positions(r) for r in ids]
        positions = long(pos) if axes == 1 else long([[[p * (a + 1) for p in row] for row in pos] for a in range(3)])
        cases.append(
            _xdoc(
                f"generated_{i:02d}",
                {"document_ids": long(ids), "attention_document_ids": long(ids), "position_ids": positions},
                description=f"seeded random {'mRoPE [3, B, S]' if axes == 3 else 'text'} positions, "
                f"B={batch_size}, S={width}",
            )
        )
    return cases


def case_xdoc_bound_translated_only():
    # Subdocument 1 at [0, 1], subdocument 2 at [0, 6] (a jump), a pad slot at 9: translated [0, 1, 2, 8, 9].
    batch = {
        "position_ids": long([[0, 1, 0, 6, 9]]),
        "document_ids": long([[1, 1, 2, 2, 0]]),
        "attention_document_ids": long([[1, 1, 2, 2, 0]]),
    }
    translated = {"position_ids": long([[0, 1, 2, 8, 9]]), "attention_document_ids": long([[1, 1, 1, 1, 0]])}
    # (name suffix, mask type, max_sequence_length): the largest translated position is 8 < the bound
    passing = (("", "block_causal", 9), ("_10", "block_causal", 10), ("_9_ids", "document_ids", 9))
    passing += (("_10_ids", "document_ids", 10),)
    return [
        _xdoc(
            f"bound_skips_padding{suffix}",
            batch,
            translated,
            clauses=("xdoc-contract", "xdoc-positions"),
            contract={"max_sequence_length": bound}
            if not suffix
            else {"packed_mask_type": mask, "max_sequence_length": bound},
            description=f"{mask}, max_sequence_length {bound}: the pad slot's position 9 (document id 0) is not bounded",
        )
        for suffix, mask, bound in passing
    ] + [
        _xdoc(
            "bound_names_the_translated_position",
            batch,
            error=("ValueError", ("max_sequence_length", 5, 8)),
            clauses=("xdoc-contract",),
            contract={"max_sequence_length": 5},
            description="max_sequence_length 5: the one translated position past it (8) raises, naming both",
        ),
        _xdoc(
            "bound_names_the_translated_position_of_an_excluded_token",
            {**batch, "attention_document_ids": long([[1, 1, 2, 0, 0]])},
            error=("ValueError", ("max_sequence_length", 5, 8)),
            clauses=("xdoc-contract",),
            contract={"max_sequence_length": 5},
            description="the same with the token at 8 excluded from attention (id 0): its document still numbers "
            "it, so it is bounded too",
        ),
    ]


def case_adapt_small():
    ids = long([[1, 1, 1, 2, 2, 0]])
    positions = long([[0, 1, 2, 0, 1, 0]])
    # (name, batch, attention_eligibility: None is passed as None, error type, facts, the [adapt-errors] item)
    bad = [
        (
            "missing_document_ids_none_eligibility",
            {"input_ids": long([[1, 2]])},
            None,
            "ValueError",
            ("document_ids",),
            1,
        ),
        (
            "int32_document_ids_none_eligibility",
            {"document_ids": torch.tensor([[1, 1]], dtype=torch.int32)},
            None,
            "TypeError",
            ("document_ids",),
            2,
        ),
        ("1d_document_ids_none_eligibility", {"document_ids": long([1, 1])}, None, "ValueError", ("document_ids",), 3),
        (
            "int_eligibility",
            {"document_ids": long([[1, 1]])},
            long([[1, 0]]),
            "TypeError",
            ("attention_eligibility",),
            4,
        ),
        (
            "eligibility_longer_than_the_ids",
            {"document_ids": long([[1, 1]])},
            bools([[T, T, T]]),
            "ValueError",
            ("attention_eligibility", Shape(1, 2), Shape(1, 3)),
            5,
        ),
    ]
    return [
        Case(
            name="test_adapt_copies_document_ids",
            clauses=("adapt-attention-ids", "adapt-no-mutation"),
            description="no eligibility: attention_document_ids equal the document ids, padding included",
            function="adapt_model_inputs",
            inputs={"batch": {"document_ids": long([[1, 1, 2, 0], [1, 2, 3, 3]])}},
            expected={"attention_document_ids": long([[1, 1, 2, 0], [1, 2, 3, 3]])},
            keys=("document_ids", "attention_document_ids"),
        ),
        Case(
            name="test_adapt_excludes_without_renumbering",
            clauses=("adapt-attention-ids", "adapt-no-mutation"),
            description="ineligible (e.g. synthetic image) tokens get id 0; the other ids are kept as they are",
            function="adapt_model_inputs",
            inputs={"batch": {"document_ids": ids}, "attention_eligibility": bools([[T, F, T, F, F, T]])},
            expected={"attention_document_ids": long([[1, 0, 1, 0, 0, 0]]), "document_ids": ids},
        ),
        # Processor exclusions under xdoc, in two steps (adapt_model_inputs, then enable_xdoc_attention
        # on the mapping it returns): an ineligible token stays excluded, but its subdocument still numbers it.
        Case(
            name="test_adapt_excludes_one_token_before_xdoc",
            clauses=("adapt-attention-ids",),
            description="eligibility [[T,F,T,T,T,T]]: token 1 gets id 0 (step 1 of 2, see "
            "test_xdoc_keeps_processor_exclusions)",
            function="adapt_model_inputs",
            inputs={
                "batch": {"position_ids": positions, "document_ids": ids},
                "attention_eligibility": bools([[T, F, T, T, T, T]]),
            },
            expected={"attention_document_ids": long([[1, 0, 1, 2, 2, 0]])},
            keys=("position_ids", "document_ids", "attention_document_ids"),
        ),
        _xdoc(
            "keeps_processor_exclusions",
            {"position_ids": positions, "document_ids": ids, "attention_document_ids": long([[1, 0, 1, 2, 2, 0]])},
            {"attention_document_ids": long([[1, 0, 1, 1, 1, 0]]), "position_ids": long([[0, 1, 2, 3, 4, 0]])},
            clauses=("xdoc-attention-ids", "xdoc-positions"),
            description="the mapping test_adapt_excludes_one_token_before_xdoc returns (step 2 of 2): the excluded "
            "token stays 0, its subdocument still numbers it",
        ),
    ] + [
        Case(
            name=f"test_adapt_rejects_{name}",
            clauses=("adapt-errors", f"adapt-errors.{item}"),
            description=f"adapt_model_inputs: {name.replace('_', ' ')}",
            function="adapt_model_inputs",
            inputs={"batch": batch, "attention_eligibility": eligibility},
            error=(kind, facts),
        )
        for name, batch, eligibility, kind, facts, item in bad
    ]


def case_xdoc_small():
    def batch(positions=(0, 1, 0), ids=(1, 1, 2), attention=None):
        return {
            "position_ids": long([list(positions)]),
            "document_ids": long([list(ids)]),
            "attention_document_ids": long([list(ids if attention is None else attention)]),
        }

    def without(key):
        out = batch()
        del out[key]
        return out

    good = batch()
    # (name, batch, error type, facts, the [xdoc-errors] item)
    bad = [
        ("no_document_ids", without("document_ids"), "ValueError", ("document_ids",), 1),
        ("no_attention_ids", without("attention_document_ids"), "ValueError", ("attention_document_ids",), 1),
        ("no_positions", without("position_ids"), "ValueError", ("position_ids",), 1),
        (
            "int32_positions_of_3",
            {**good, "position_ids": torch.tensor([[0, 1, 0]], dtype=torch.int32)},
            "TypeError",
            ("position_ids",),
            2,
        ),
        (
            "int32_ids",
            {**good, "document_ids": torch.tensor([[1, 1, 2]], dtype=torch.int32)},
            "TypeError",
            ("document_ids",),
            2,
        ),
        ("positions_wrong_length", {**good, "position_ids": long([[0, 1]])}, "ValueError", ("position_ids",), 3),
        ("positions_4d", {**good, "position_ids": long([[[[0, 1, 0]]]])}, "ValueError", ("position_ids",), 3),
        (
            "attention_ids_longer",
            {**good, "attention_document_ids": long([[1, 1, 2, 2]])},
            "ValueError",
            ("attention_document_ids",),
            3,
        ),
        ("negative_position_of_3", {**good, "position_ids": long([[0, -1, 0]])}, "ValueError", ("position_ids",), 4),
        # item 4 is checked per element: a negative position in the last column, also on mRoPE's last axis
        (
            "negative_position_last_column",
            {**good, "position_ids": long([[0, 1, -1]])},
            "ValueError",
            ("position_ids",),
            4,
        ),
        (
            "negative_mrope_position_last_axis_last_column",
            {**good, "position_ids": long([[[0, 1, 0]], [[0, 1, -1]]])},
            "ValueError",
            ("position_ids",),
            4,
        ),
    ]
    cases = [
        _xdoc(f"rejects_{n}", b, error=(k, w), clauses=("xdoc-errors", f"xdoc-errors.{item}"))
        for n, b, k, w, item in bad
    ]
    cases.append(
        _xdoc(
            "mrope_offset_takes_the_largest_axis",
            {**batch((0, 1, 0, 1), (1, 1, 2, 2)), "position_ids": long([[[0, 1, 0, 1]], [[0, 5, 0, 0]]])},
            {"position_ids": long([[[0, 1, 6, 7]], [[0, 5, 6, 6]]])},
            clauses=("xdoc-positions",),
            description="A16: two axes, axis 1 of subdocument 1 reaches 5: subdocument 2 starts at 6 on every axis",
        )
    )
    two = batch((0, 1, 2, 0, 1, 2), (1, 1, 1, 2, 2, 2))
    over = batch((0, 1, 2, 0, 1, 4), (1, 1, 1, 2, 2, 2))
    for mask_type in ("block_causal", "document_ids"):
        for bound in (None, 6, 100):
            cases.append(
                _xdoc(
                    f"bound_{bound}_{mask_type}",
                    two,
                    {"position_ids": long([[0, 1, 2, 3, 4, 5]])},
                    clauses=("xdoc-contract",),
                    contract={
                        "packed_mask_type": mask_type,
                        "return_packed_sequence_metadata": False,
                        "return_document_ids": False,
                        "max_sequence_length": bound,
                    },
                    description=f"{mask_type}, max_sequence_length {bound}: translated positions 0..5 pass; the mask "
                    "type changes nothing",
                )
            )
        cases.append(
            _xdoc(
                f"bound_6_reached_{mask_type}",
                over,
                error=("ValueError", ("max_sequence_length", 7, 6)),
                clauses=("xdoc-contract",),
                contract={
                    "packed_mask_type": mask_type,
                    "return_packed_sequence_metadata": False,
                    "return_document_ids": False,
                    "max_sequence_length": 6,
                },
                description=f"{mask_type}: translated positions [0,1,2,3,4,7]; only 7 reaches the bound 6, so the "
                "error names 7 and 6",
            )
        )
    return cases


def case_xdoc_mrope_bound_at_the_largest_translated_position():
    """[xdoc-contract] exactly at its bound on mRoPE positions, where the largest translated
    position is on the last axis, in the last column: axis 0 [0,1,0,1], axis 1 [0,5,0,3], ids
    (1,1,2,2): subdocument 2 starts at 6 on every axis ([xdoc-positions], A16), so axis 1 ends at
    9. max_sequence_length 9 (equal to it) raises naming it and 9; 10 passes."""
    batch = {
        "position_ids": long([[[0, 1, 0, 1]], [[0, 5, 0, 3]]]),
        "document_ids": long([[1, 1, 2, 2]]),
        "attention_document_ids": long([[1, 1, 2, 2]]),
    }
    return [
        _xdoc(
            "mrope_bound_equal_to_the_last_axis_largest",
            batch,
            error=("ValueError", ("max_sequence_length", 9)),
            clauses=("xdoc-contract",),
            contract={"max_sequence_length": 9},
            description="mRoPE, translated axis 1 ends at 9 (last axis, last column): max_sequence_length 9 raises "
            "naming it and 9",
        ),
        _xdoc(
            "mrope_bound_one_past_the_last_axis_largest",
            batch,
            {"position_ids": long([[[0, 1, 6, 7]], [[0, 5, 6, 9]]]), "attention_document_ids": long([[1, 1, 1, 1]])},
            clauses=("xdoc-contract", "xdoc-positions"),
            contract={"max_sequence_length": 10},
            description="the same with max_sequence_length 10: passes, positions translated on both axes",
        ),
    ]
