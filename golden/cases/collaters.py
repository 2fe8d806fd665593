"""Golden cases for SPEC.md's "``Datum`` and the canonical collaters", its collaters part:
``default_collater``, ``packed_sequence_thd_collater`` and ``pack_features_for_thd``.
Canon literals are written by hand from that section, whose rules follow upstream
nemo-automodel 0.7.0 (docs/sources.md#nemo-automodel); this module is their only home.
Generated cases are seeded random features whose expected values come from the reference.
"""

from __future__ import annotations

import random

import torch

from batchspec.conformance.golden.api import (
    IGNORE_INDEX,
    PAD_TOKEN_IDS_KEY,
    THD_PAD,
    Case,
    bools,
    int32,
    long,
)

F, T = False, True
X = IGNORE_INDEX


def case_collaters():
    rng = random.Random(20260209)
    cases = [
        Case(
            name="test_pack_features_rejects_empty_list",
            clauses=("pack-errors", "pack-errors.1"),
            description="no feature",
            function="pack_features_for_thd",
            inputs={"features": []},
            error=("ValueError", ()),
        ),
        Case(
            name="test_pack_features_rejects_empty_input_ids",
            clauses=("pack-errors", "pack-errors.2"),
            description="empty input_ids",
            function="pack_features_for_thd",
            inputs={"features": [{"input_ids": []}]},
            error=("ValueError", ()),
        ),
        Case(
            name="test_pack_features_rejects_label_length",
            clauses=("pack-errors", "pack-errors.3"),
            description="labels length",
            function="pack_features_for_thd",
            inputs={"features": [{"input_ids": [1, 2, 3], "labels": [2, 3]}]},
            error=("ValueError", (2, 3)),
        ),
        Case(
            name="test_pack_features_two_features",
            clauses=("pack-features",),
            description="features joined end to end, positions restart, no labels -> ignore_index",
            function="pack_features_for_thd",
            inputs={"features": [{"input_ids": [1, 2, 3], "labels": [2, 3, 4]}, {"input_ids": [5, 6]}]},
            options={"ignore_index": -1},
            expected={
                "input_ids": [1, 2, 3, 5, 6],
                "labels": [2, 3, 4, -1, -1],
                "position_ids": [0, 1, 2, 0, 1],
                "seq_lens": [3, 2],
                "seq_lens_padded": [3, 2],
            },
        ),
    ]
    for i in range(4):
        features = []
        for _ in range(rng.randint(1, 3)):
            n = rng.randint(1, 5)
            feature = {"input_ids": [rng.randint(1, 9) for _ in range(n)]}
            if rng.random() < 0.6:
                feature["labels"] = [rng.randint(1, 9) for _ in range(n)]
            features.append(feature)
        cases.append(
            Case(
                name=f"test_pack_features_generated_{i:02d}",
                clauses=("pack-features",),
                description="seeded random features",
                function="pack_features_for_thd",
                inputs={"features": features},
            )
        )
    for i in range(4):
        width = rng.randint(2, 6)
        items = []
        for _ in range(rng.randint(1, 3)):
            n = rng.randint(1, width)
            items.append(
                {
                    "input_ids": [rng.randint(1, 9) for _ in range(n)],
                    "attention_mask": [1] * n,
                    "labels": [rng.randint(1, 9) for _ in range(n)],
                }
            )
        cases.append(
            Case(
                name=f"test_default_collater_generated_{i:02d}",
                clauses=("dcoll-fields", "dcoll-pad-values", "dcoll-padding-mask"),
                description="seeded random list items",
                function="default_collater",
                inputs={"batch": items},
                options={"pad_seq_len_divisible": 4} if i % 2 else {},
            )
        )
        cases.append(
            Case(
                name=f"test_thd_collater_synthesized_generated_{i:02d}",
                clauses=("thdcoll-synthesized",),
                description="seeded random items without seq_lens",
                function="packed_sequence_thd_collater",
                inputs={"batch": items},
            )
        )
    packed = [
        {
            "input_ids": [1, 2, 3, 4],
            "labels": [2, 3, 4, X],
            "position_ids": [0, 1, 0, 1],
            "seq_lens": [2, 2],
            "seq_lens_padded": [2, 2],
        },
        {
            "input_ids": [5, 6, 7, 8],
            "labels": [6, 7, 8, X],
            "position_ids": [0, 1, 2, 3],
            "seq_lens": [4],
            "seq_lens_padded": [4],
        },
    ]
    cases.append(
        Case(
            name="test_thd_collater_prepacked",
            clauses=("thdcoll-prepacked",),
            description="pre-packed items: seq_lens padded with -1000",
            function="packed_sequence_thd_collater",
            inputs={"batch": packed},
            expected={
                "input_ids": long([[1, 2, 3, 4], [5, 6, 7, 8]]),
                "labels": long([[2, 3, 4, X], [6, 7, 8, X]]),
                "position_ids": long([[0, 1, 0, 1], [0, 1, 2, 3]]),
                "seq_lens": long([[2, 2], [4, THD_PAD]]),
                "seq_lens_padded": long([[2, 2], [4, THD_PAD]]),
                "qkv_format": "thd",
            },
            keys=("input_ids", "labels", "position_ids", "seq_lens", "seq_lens_padded", "qkv_format"),
        )
    )
    cases.append(
        Case(
            name="test_default_collater_tensors_and_scalars",
            clauses=("dcoll-fields", "dcoll-padding-mask"),
            description="1-D tensors concatenate as [1, N]; scalars stack through numpy",
            function="default_collater",
            inputs={"batch": [{"input_ids": long([1, 2]), "score": 0.5}, {"input_ids": long([3, 0]), "score": 1.5}]},
        )
    )
    return cases


PAD = PAD_TOKEN_IDS_KEY  # the item-0 pad-value override of the canonical collaters
THD = ("input_ids", "labels", "position_ids", "seq_lens", "seq_lens_padded", "qkv_format")


def _dcoll(name, clauses, description, batch, expected=None, error=None, keys=None, **options):
    return Case(
        name=f"test_default_collater_{name}",
        clauses=tuple(clauses),
        description=description,
        function="default_collater",
        inputs={"batch": batch},
        options=options,
        expected=expected,
        error=error,
        keys=keys,
    )


def case_default_collater():
    override = {"input_ids": 7, "labels": -1, "attention_mask": 0, "segment": 3}
    overridden = [
        {"input_ids": [1, 2, 3], "labels": [2, 3, 4], "attention_mask": [1, 1, 1], "segment": [5, 5, 5]},
        {"input_ids": [4], "labels": [5], "attention_mask": [1], "segment": [6]},
    ]
    big = 2**40 + 3  # far above the int32 range, inside int64
    cases = [
        _dcoll(
            "int64_ids_beyond_int32",
            ["dcoll-fields"],
            "list values far above the int32 range and at the int64 edges come back exactly, as int64",
            [
                {"input_ids": [big, 2**63 - 1, -(2**63)], "labels": [big + 1, -100, 5]},
                {"input_ids": [2**31], "labels": [2**32]},
            ],
            {
                "input_ids": long([[big, 2**63 - 1, -(2**63)], [2**31, 0, 0]]),
                "labels": long([[big + 1, -100, 5], [2**32, -100, -100]]),
            },
            keys=["input_ids", "labels", "padding_mask"],
        ),
        _dcoll(
            "pad_values_per_key",
            ["dcoll-fields", "dcoll-pad-values", "dcoll-padding-mask"],
            "labels pad with ignore_index, attention_mask/loss_mask/input_ids with 0, other keys with item 0's "
            "last element",
            [
                {
                    "input_ids": [1, 2, 3],
                    "labels": [2, 3, 4],
                    "attention_mask": [1, 1, 1],
                    "loss_mask": [1, 1, 0],
                    "token_type_ids": [5, 6, 7],
                },
                {"input_ids": [4], "labels": [5], "attention_mask": [1], "loss_mask": [1], "token_type_ids": [8]},
            ],
            {
                "input_ids": long([[1, 2, 3], [4, 0, 0]]),
                "labels": long([[2, 3, 4], [5, X, X]]),
                "attention_mask": long([[1, 1, 1], [1, 0, 0]]),
                "loss_mask": long([[1, 1, 0], [1, 0, 0]]),
                "token_type_ids": long([[5, 6, 7], [8, 7, 7]]),
                "padding_mask": bools([[F, F, F], [F, T, T]]),
            },
            keys=("input_ids", "labels", "attention_mask", "loss_mask", "token_type_ids", "padding_mask"),
        ),
        _dcoll(
            "unknown_key_pads_with_item0_last_element",
            ["dcoll-pad-values"],
            "the quirk uses item 0's last element, even when item 0 is the shorter item",
            [{"input_ids": [1], "segment": [9]}, {"input_ids": [2, 3, 4], "segment": [1, 2, 3]}],
            {"segment": long([[9, 9, 9], [1, 2, 3]]), "input_ids": long([[1, 0, 0], [2, 3, 4]])},
        ),
    ]
    for where, batch in (
        ("item0", [{**overridden[0], PAD: dict(override)}, overridden[1]]),
        ("every_item", [{**item, PAD: dict(override)} for item in overridden]),
    ):
        cases.append(
            _dcoll(
                f"pad_override_on_{where}",
                ["dcoll-pad-values", "dcoll-padding-mask", "dcoll-fields"],
                f"{PAD} on {where.replace('_', ' ')} overrides the pad values and is absent from the output",
                batch,
                {
                    "input_ids": long([[1, 2, 3], [4, 7, 7]]),
                    "labels": long([[2, 3, 4], [5, -1, -1]]),
                    "attention_mask": long([[1, 1, 1], [1, 0, 0]]),
                    "segment": long([[5, 5, 5], [6, 3, 3]]),
                    "padding_mask": bools([[F, F, F], [F, T, T]]),
                },
                keys=("input_ids", "labels", "attention_mask", "segment", "padding_mask"),
            )
        )
    cases.append(
        _dcoll(
            "padding_mask_from_attention_mask",
            ["dcoll-padding-mask"],
            "with attention_mask present, padding_mask is attention_mask == 0, not a token-value test",
            [{"input_ids": [5, 0, 0], "attention_mask": [1, 1, 0]}, {"input_ids": [0], "attention_mask": [1]}],
            {
                "input_ids": long([[5, 0, 0], [0, 0, 0]]),
                "attention_mask": long([[1, 1, 0], [1, 0, 0]]),
                "padding_mask": bools([[F, F, T], [F, T, T]]),
            },
            keys=("input_ids", "attention_mask", "padding_mask"),
        )
    )
    for pad_id in (None, 7):
        p = 0 if pad_id is None else pad_id
        first = {"input_ids": [p, 1, 2], "labels": [1, 2, 3], **({} if pad_id is None else {PAD: {"input_ids": p}})}
        cases.append(
            _dcoll(
                f"padding_mask_from_input_ids_pad_{p}",
                ["dcoll-padding-mask", "dcoll-pad-values"],
                f"without attention_mask, padding_mask is input_ids == the pad id ({p}: "
                f"{'the default' if pad_id is None else 'the override'})",
                [first, {"input_ids": [3], "labels": [4]}],
                {
                    "input_ids": long([[p, 1, 2], [3, p, p]]),
                    "labels": long([[1, 2, 3], [4, X, X]]),
                    "padding_mask": bools([[T, F, F], [F, T, T]]),
                },
                keys=("input_ids", "labels", "padding_mask"),
            )
        )
    cases.append(
        _dcoll(
            "no_padding_mask_without_ids_or_mask",
            ["dcoll-padding-mask", "dcoll-fields", "dcoll-pad-values"],
            "neither attention_mask nor input_ids: no padding_mask key",
            [{"labels": [1, 2]}, {"labels": [3]}],
            {"labels": long([[1, 2], [3, X]])},
            keys=("labels",),
        )
    )
    # the longest length 3: exactly a multiple of 1, -1 and 3 (1 the smallest positive divisor;
    # every length is a multiple of 1 and of -1: issue 31, SPEC 1.5), one past a multiple of 2 (the
    # width rounded up however small the remainder), below 4, 5 and 8. 0, a SHOULD
    # ([dcoll-divisible-zero]), is conformance/test_collaters.py's. -2 rounds up to a multiple of
    # 2, its absolute value (SPEC 1.5's clarification; upstream's ceil(3 / -2) * -2 gives 2).
    for divisible, width in ((None, 3), (1, 3), (-1, 3), (2, 4), (-2, 4), (3, 3), (4, 4), (5, 5), (8, 8)):
        for keyword in (False, True):
            cases.append(
                _dcoll(
                    f"pad_seq_len_divisible_{str(divisible).replace('-', 'minus_')}{'_keyword' if keyword else ''}",
                    ["dcoll-fields"],
                    f"pad_seq_len_divisible={divisible} ({'by keyword' if keyword else 'positional'}): lists are "
                    f"padded to the longest length rounded up to a multiple of it, width {width}",
                    [{"input_ids": [1, 2, 3], "attention_mask": [1, 1, 1]}, {"input_ids": [4], "attention_mask": [1]}],
                    {
                        "input_ids": long([[1, 2, 3] + [0] * (width - 3), [4] + [0] * (width - 1)]),
                        "attention_mask": long([[1, 1, 1] + [0] * (width - 3), [1] + [0] * (width - 1)]),
                        "padding_mask": bools([[F, F, F] + [T] * (width - 3), [F] + [T] * (width - 1)]),
                    },
                    keys=("input_ids", "attention_mask", "padding_mask"),
                    pad_seq_len_divisible=divisible,
                    **({"keyword": True} if keyword else {}),
                )
            )
    cases.append(
        _dcoll(
            "pad_seq_len_divisible_minus_2_longest_4",
            ["dcoll-fields"],
            "pad_seq_len_divisible=-2, the longest length 4: already a multiple of 2 (|-2|), so the width stays 4",
            [{"input_ids": [1, 2, 3, 4], "attention_mask": [1, 1, 1, 1]}, {"input_ids": [5], "attention_mask": [1]}],
            {
                "input_ids": long([[1, 2, 3, 4], [5, 0, 0, 0]]),
                "attention_mask": long([[1, 1, 1, 1], [1, 0, 0, 0]]),
                "padding_mask": bools([[F, F, F, F], [F, T, T, T]]),
            },
            keys=("input_ids", "attention_mask", "padding_mask"),
            pad_seq_len_divisible=-2,
        )
    )
    cases += [
        _dcoll(
            "tensor_fields_are_concatenated",
            ["dcoll-fields"],
            "tensor values are concatenated along dim 0 with their dtype; a 1-D tensor counts as [1, N]",
            [
                {
                    "input_ids": [1, 2],
                    "pixel": torch.tensor([[1.5, 2.5]], dtype=torch.float64),
                    "ids32": int32([1, 2, 3]),
                    "flags": bools([[[T, F]]]),
                },
                {
                    "input_ids": [3],
                    "pixel": torch.tensor([[3.5, 4.5], [5.5, 6.5]], dtype=torch.float64),
                    "ids32": int32([4, 5, 6]),
                    "flags": bools([[[F, F]], [[T, T]]]),
                },
            ],
            {
                "input_ids": long([[1, 2, 0, 0], [3, 0, 0, 0]]),
                "pixel": torch.tensor([[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]], dtype=torch.float64),
                "ids32": int32([[1, 2, 3], [4, 5, 6]]),
                "flags": bools([[[T, F]], [[F, F]], [[T, T]]]),
                "padding_mask": bools([[F, F, T, T], [F, T, T, T]]),
            },
            keys=("input_ids", "pixel", "ids32", "flags", "padding_mask"),
            pad_seq_len_divisible=4,
        ),
        _dcoll(
            "tensor_input_ids",
            ["dcoll-fields"],
            "pre-batched [1, S] int32 tensor input_ids are concatenated and keep int32; padding_mask follows them",
            [{"input_ids": int32([[5, 0, 6]])}, {"input_ids": int32([[0, 7, 8]])}],
            {"input_ids": int32([[5, 0, 6], [0, 7, 8]]), "padding_mask": bools([[F, T, F], [T, F, F]])},
            keys=("input_ids", "padding_mask"),
        ),
        _dcoll(
            "keys_come_from_item0",
            ["dcoll-fields"],
            "keys are item 0's, in its order; a key only a later item has is ignored",
            [{"labels": [1], "input_ids": [2]}, {"labels": [3, 4], "input_ids": [5, 6], "extra": [7, 8]}],
            {
                "labels": long([[1, X], [3, 4]]),
                "input_ids": long([[2, 0], [5, 6]]),
                "padding_mask": bools([[F, T], [F, F]]),
            },
            keys=("labels", "input_ids", "padding_mask"),
        ),
        _dcoll(
            "rejects_an_empty_batch", ["dcoll-fields"], "an empty batch raises IndexError", [], error=("IndexError", ())
        ),
        _dcoll(
            "rejects_a_key_missing_from_a_later_item",
            ["dcoll-fields"],
            "a key of item 0 missing from a later item raises KeyError naming it",
            [{"input_ids": [1], "labels": [2]}, {"input_ids": [3]}],
            error=("KeyError", ("labels",)),
        ),
    ]
    # Scalars are stacked to [B] through numpy (Python floats give float64); 0-D tensors keep their dtype.
    for name, first, second, score in (
        ("float", 0.5, 1.5, torch.tensor([0.5, 1.5], dtype=torch.float64)),
        ("0d_int32", torch.tensor(2, dtype=torch.int32), torch.tensor(5, dtype=torch.int32), int32([2, 5])),
        (
            "0d_float64",
            torch.tensor(0.25, dtype=torch.float64),
            torch.tensor(0.75, dtype=torch.float64),
            torch.tensor([0.25, 0.75], dtype=torch.float64),
        ),
    ):
        cases.append(
            _dcoll(
                f"scalar_fields_are_stacked_{name}",
                ["dcoll-fields"],
                f"{name.replace('_', ' ')} scalars are stacked to [B]",
                [{"input_ids": [1, 2], "score": first}, {"input_ids": [3], "score": second}],
                {"input_ids": long([[1, 2], [3, 0]]), "score": score},
                keys=("input_ids", "score", "padding_mask"),
            )
        )
    return cases


PREPACKED = [
    {
        "input_ids": [1, 2, 3, 99, 4, 5],
        "labels": [2, 3, X, X, 5, X],
        "position_ids": [0, 1, 2, 0, 0, 1],
        "seq_lens": [3, 2],
        "seq_lens_padded": [4, 2],
    },
    {
        "input_ids": [6, 7, 8, 9, 10, 11],
        "labels": [7, X, 9, X, 11, X],
        "position_ids": [0, 1, 0, 1, 0, 1],
        "seq_lens": [2, 2, 2],
        "seq_lens_padded": [2, 2, 2],
    },
]
FEATURES = [
    {"input_ids": [1, 2, 3], "labels": [2, 3, 4], "attention_mask": [1, 1, 1]},
    {"input_ids": [5, 6]},
    {"input_ids": [7], "labels": [8]},
]


def _thdcoll(name, clauses, description, batch, expected=None, error=None, keys=THD):
    return Case(
        name=f"test_thd_collater_{name}",
        clauses=tuple(clauses),
        description=description,
        function="packed_sequence_thd_collater",
        inputs={"batch": batch},
        expected=expected,
        error=error,
        keys=None if error else keys,
    )


def case_thd_collater():
    extra = {"attention_mask": [1] * 6, "loss_mask": [1] * 6, PAD: {"input_ids": 0, "labels": X}}
    stacked = {
        "input_ids": long([[1, 2, 3, 99, 4, 5], [6, 7, 8, 9, 10, 11]]),
        "labels": long([[2, 3, X, X, 5, X], [7, X, 9, X, 11, X]]),
        "position_ids": long([[0, 1, 2, 0, 0, 1], [0, 1, 0, 1, 0, 1]]),
        "seq_lens": long([[3, 2, THD_PAD], [2, 2, 2]]),
        "seq_lens_padded": long([[4, 2, THD_PAD], [2, 2, 2]]),
        "qkv_format": "thd",
    }
    shorter = {
        **PREPACKED[1],
        **{k: PREPACKED[1][k][:4] for k in ("input_ids", "labels", "position_ids")},
        "seq_lens": [2, 2],
        "seq_lens_padded": [2, 2],
    }
    return [
        _thdcoll(
            "prepacked_items_are_stacked",
            ["thdcoll-prepacked"],
            "two pre-packed items of length 6 with 2 and 3 sequences: stacked, seq_lens padded with the THD fill",
            PREPACKED,
            stacked,
        ),
        _thdcoll(
            "prepacked_items_drop_other_keys",
            ["thdcoll-prepacked"],
            f"the same items with attention_mask, loss_mask and {PAD}: those keys are dropped",
            [{**item, **extra} for item in PREPACKED],
            stacked,
        ),
        _thdcoll(
            "prepacked_single_item",
            ["thdcoll-prepacked"],
            "one pre-packed record (as collate_datums builds it) becomes [1, L] and [1, N]",
            [
                {
                    "input_ids": [1, 2, 3],
                    "labels": [2, X, 4],
                    "position_ids": [0, 1, 0],
                    "seq_lens": [2, 1],
                    "seq_lens_padded": [2, 1],
                }
            ],
            {
                "input_ids": long([[1, 2, 3]]),
                "labels": long([[2, X, 4]]),
                "position_ids": long([[0, 1, 0]]),
                "seq_lens": long([[2, 1]]),
                "seq_lens_padded": long([[2, 1]]),
                "qkv_format": "thd",
            },
        ),
        _thdcoll(
            "prepacked_of_different_lengths",
            ["thdcoll-prepacked"],
            "pre-packed items of lengths 6 and 4 cannot be stacked: RuntimeError",
            [PREPACKED[0], shorter],
            error=("RuntimeError", ()),
        ),
        _thdcoll("of_an_empty_batch", ["thdcoll-prepacked"], "an empty batch gives {}", [], {}, keys=()),
        _thdcoll(
            "on_a_pack_features_record",
            ["pack-features", "thdcoll-prepacked"],
            "the record pack_features_for_thd makes of FEATURES (test_pack_features_three_features_ignore_index_default) "
            "is a valid pre-packed item",
            [
                {
                    "input_ids": [1, 2, 3, 5, 6, 7],
                    "labels": [2, 3, 4, X, X, 8],
                    "position_ids": [0, 1, 2, 0, 1, 0],
                    "seq_lens": [3, 2, 1],
                    "seq_lens_padded": [3, 2, 1],
                }
            ],
            {
                "input_ids": long([[1, 2, 3, 5, 6, 7]]),
                "labels": long([[2, 3, 4, X, X, 8]]),
                "position_ids": long([[0, 1, 2, 0, 1, 0]]),
                "seq_lens": long([[3, 2, 1]]),
                "seq_lens_padded": long([[3, 2, 1]]),
                "qkv_format": "thd",
            },
        ),
        _thdcoll(
            "synthesizes_single_sequence_packs",
            ["thdcoll-synthesized"],
            "items without seq_lens: seq_lens from attention_mask, padded lengths the longest length, labels padded "
            "with ignore_index",
            [
                {"input_ids": [1, 2, 3], "labels": [2, 3, 7], "attention_mask": [1, 1, 0]},
                {"input_ids": [4, 5], "labels": [5, 6]},
            ],
            {
                "input_ids": long([[1, 2, 3], [4, 5, 0]]),
                "labels": long([[2, 3, 7], [5, 6, X]]),
                "position_ids": long([[0, 1, 2], [0, 1, 2]]),
                "seq_lens": long([[2], [2]]),
                "seq_lens_padded": long([[3], [3]]),
                "qkv_format": "thd",
            },
        ),
        _thdcoll(
            "synthesized_pad_override",
            ["thdcoll-synthesized", "thdcoll-prepacked"],
            f"the input_ids pad comes from {PAD}; labels are still padded with ignore_index",
            [
                {"input_ids": [1], "labels": [2], PAD: {"input_ids": 9, "labels": -1}},
                {
                    "input_ids": [3, 4, 5],
                    "labels": [4, 5, 6],
                    "attention_mask": [1, 1, 1],
                    PAD: {"input_ids": 9, "labels": -1},
                },
            ],
            {
                "input_ids": long([[1, 9, 9], [3, 4, 5]]),
                "labels": long([[2, X, X], [4, 5, 6]]),
                "position_ids": long([[0, 1, 2], [0, 1, 2]]),
                "seq_lens": long([[1], [3]]),
                "seq_lens_padded": long([[3], [3]]),
                "qkv_format": "thd",
            },
        ),
        _thdcoll(
            "synthesized_needs_labels",
            ["thdcoll-synthesized"],
            "synthesis needs labels: an item without them raises KeyError",
            [{"input_ids": [1, 2], "attention_mask": [1, 1]}, {"input_ids": [3], "attention_mask": [1]}],
            error=("KeyError", ()),
        ),
    ]


def case_pack_features():
    cases = [
        Case(
            name=f"test_pack_features_three_features_ignore_index_{'default' if ii is None else ii}",
            clauses=("pack-features",),
            description=f"features join end to end; a feature without labels contributes ignore_index "
            f"({X if ii is None else ii}) everywhere",
            function="pack_features_for_thd",
            inputs={"features": FEATURES},
            options={} if ii is None else {"ignore_index": ii},
            expected={
                "input_ids": [1, 2, 3, 5, 6, 7],
                "labels": [2, 3, 4] + [X if ii is None else ii] * 2 + [8],
                "position_ids": [0, 1, 2, 0, 1, 0],
                "seq_lens": [3, 2, 1],
                "seq_lens_padded": [3, 2, 1],
            },
            keys=("input_ids", "labels", "position_ids", "seq_lens", "seq_lens_padded"),
        )
        for ii in (None, -1, 0)
    ]
    cases += [
        Case(
            name=f"test_pack_features_rejects_{name}",
            clauses=("pack-errors", f"pack-errors.{item}"),
            description=what,
            function="pack_features_for_thd",
            inputs={"features": features},
            error=("ValueError", facts),
        )
        # (name, features, facts, description, the [pack-errors] item)
        for name, features, facts, what, item in (
            (
                "an_empty_second_sequence",
                [{"input_ids": [1, 2]}, {"input_ids": []}],
                (),
                "an empty sequence after a good one",
                2,
            ),
            ("short_labels", [{"input_ids": [1, 2], "labels": [1]}], (1, 2), "labels of length 1 on 2 tokens", 3),
            (
                "long_labels",
                [{"input_ids": [1]}, {"input_ids": [1, 2, 3], "labels": [1, 2, 3, 4]}],
                (4, 3),
                "labels of length 4 on 3 tokens",
                3,
            ),
        )
    ]
    return cases
