"""Golden cases for SPEC.md's "``Datum`` and the canonical collaters": ``Datum``,
``to_features``, ``collate_datums`` (Examples I and J, the field reports' ``collate_datums``
parts, A6-A9) and the canonical collaters.
Canon literals are copied from conformance/test_datum.py; generated cases are seeded random
datums and features whose expected values come from the reference.
"""

from __future__ import annotations

import random

import torch

from conformance.golden.api import Case, Shape, bools, f32, long

F, T = False, True
X = -100
PADDED = ("input_ids", "attention_mask", "labels", "padding_mask")
PACKED = ("input_ids", "labels", "position_ids", "seq_lens", "seq_lens_padded", "qkv_format")


def D(ids, **lfi) -> dict:
    """A Datum spec: input_ids (list or tensor) and loss_fn_inputs (lists, scalars or tensors)."""
    return {"input_ids": ids, "loss_fn_inputs": lfi}


EXAMPLE = [
    D([10, 11, 12], target_tokens=[11, 12, 13], weights=[1, 1, 0], logprobs=[-0.5, -1, -2], advantages=[0.5]),
    D([20, 21], target_tokens=[21, 22], weights=[0, 1], logprobs=[-0.25, -0.75], advantages=[-1.5]),
]
EXAMPLE_I = {
    "input_ids": long([[10, 11, 12], [20, 21, 0]]),
    "attention_mask": long([[1, 1, 1], [1, 1, 0]]),
    "labels": long([[11, 12, X], [X, 22, X]]),
    "padding_mask": bools([[F, F, F], [F, F, T]]),
    "advantages": f32([0.5, -1.5]),
    "logprobs": f32([[-0.5, -1, -2], [-0.25, -0.75, 0]]),
    "weights": f32([[1, 1, 0], [0, 1, 0]]),
}
EXAMPLE_J = {
    "input_ids": long([[10, 11, 12, 20, 21]]),
    "labels": long([[11, 12, X, X, 22]]),
    "position_ids": long([[0, 1, 2, 0, 1]]),
    "seq_lens": long([[3, 2]]),
    "seq_lens_padded": long([[3, 2]]),
    "qkv_format": "thd",
    "advantages": f32([0.5, -1.5]),
    "logprobs": f32([[-0.5, -1, -2, -0.25, -0.75]]),
    "weights": f32([[1, 1, 0, 0, 1]]),
}
SIDE = ("advantages", "logprobs", "weights")


def collate(name, clauses, description, datums, expected=None, error=None, keys=None, **options):
    return Case(
        name=f"test_collate_{name}",
        clauses=tuple(clauses),
        description=description,
        function="collate_datums",
        inputs={"datums": datums},
        options=options,
        expected=expected,
        error=error,
        keys=keys,
    )


def case_examples():
    return [
        collate(
            "example_i_padded",
            ["collate-padded", "collate-side-inputs", "collate-weights", "collate-no-mutation"],
            "Example I: padded collation, side inputs in sorted key order",
            EXAMPLE,
            EXAMPLE_I,
            keys=PADDED + SIDE,
        ),
        collate(
            "example_i_divisible_ignore_index",
            ["collate-padded", "collate-weights"],
            "Example I, pad_seq_len_divisible=4, ignore_index=-1: masked -1, padding stays -100 (A6)",
            EXAMPLE,
            {
                "input_ids": long([[10, 11, 12, 0], [20, 21, 0, 0]]),
                "attention_mask": long([[1, 1, 1, 0], [1, 1, 0, 0]]),
                "labels": long([[11, 12, -1, X], [-1, 22, X, X]]),
                "padding_mask": bools([[F, F, F, T], [F, F, T, T]]),
                "advantages": f32([0.5, -1.5]),
                "logprobs": f32([[-0.5, -1, -2, 0], [-0.25, -0.75, 0, 0]]),
                "weights": f32([[1, 1, 0, 0], [0, 1, 0, 0]]),
            },
            keys=PADDED + SIDE,
            pad_seq_len_divisible=4,
            ignore_index=-1,
        ),
        collate(
            "example_j_packed",
            ["collate-packed", "collate-side-inputs", "collate-weights", "collate-no-mutation"],
            "Example J: packed collation",
            EXAMPLE,
            EXAMPLE_J,
            keys=PACKED + SIDE,
            packed=True,
        ),
        collate(
            "example_j_packed_divisible_ignored",
            ["collate-packed"],
            "Example J: pad_seq_len_divisible is ignored",
            EXAMPLE,
            EXAMPLE_J,
            keys=PACKED + SIDE,
            packed=True,
            pad_seq_len_divisible=8,
        ),
        collate(
            "example_j_packed_ignore_index",
            ["collate-packed", "collate-weights"],
            "packed mode writes ignore_index at zero-weight positions",
            EXAMPLE,
            {"labels": long([[11, 12, -1, -1, 22]])},
            packed=True,
            ignore_index=-1,
        ),
        collate(
            "options_are_keyword_only",
            ["collate-keyword-only"],
            "packed passed positionally raises TypeError",
            EXAMPLE,
            error=("TypeError", ()),
            positional=[True],
        ),
        collate(
            "options_are_keyword_only_all_three",
            ["collate-keyword-only"],
            "all three options passed positionally raise TypeError",
            EXAMPLE,
            error=("TypeError", ()),
            positional=[False, None, -1],
        ),
    ]


def case_field_reports():
    f05 = [
        D([50, 51, 52], target_tokens=[51, 52, 0], advantages=[1.0, 1.0, 1.0], weights=[1, 1, 0]),
        D([60, 61], target_tokens=[61, 0], advantages=[-0.5, -0.5], weights=[1, 0]),
    ]
    f06 = [
        D([5, 6, 0], target_tokens=[6, 0, 0], weights=[1, 1, 0]),
        D([7, 8, 9, 10], target_tokens=[8, 9, 10, 0], weights=[1, 1, 1, 1]),
    ]
    f13 = [
        D(
            torch.tensor([11, 12, 13], dtype=torch.int32),
            target_tokens=torch.tensor([12, 13, 0], dtype=torch.int32),
            weights=[1, 1, 0],
        ),
        D(
            torch.tensor([21, 22], dtype=torch.int32),
            target_tokens=torch.tensor([22, 0], dtype=torch.int32),
            weights=[1, 0],
        ),
    ]
    f15 = [
        D([11, 12, 13], target_tokens=[12, 13, 0], weights=[1, 1, 0], logprobs=[-0.5, -1, -2]),
        D([21, 22], target_tokens=[22, 0], weights=[1, 0], logprobs=[-0.25, -0.75]),
    ]
    f12 = [D(x) for x in ([1, 2], [], [3, 4, 5], [], [6])]
    attention = [[1, 1, 0], [0, 0, 0], [1, 1, 1], [0, 0, 0], [1, 0, 0]]
    return [
        collate(
            "f05_packed_advantages_carried_raw",
            ["collate-packed", "collate-weights", "collate-side-inputs"],
            "F05: per-token advantages across a packed boundary are carried raw",
            f05,
            {
                "input_ids": long([[50, 51, 52, 60, 61]]),
                "labels": long([[51, 52, X, 61, X]]),
                "position_ids": long([[0, 1, 2, 0, 1]]),
                "seq_lens": long([[3, 2]]),
                "seq_lens_padded": long([[3, 2]]),
                "qkv_format": "thd",
                "advantages": f32([[1.0, 1.0, 1.0, -0.5, -0.5]]),
                "weights": f32([[1.0, 1.0, 0.0, 1.0, 0.0]]),
            },
            keys=PACKED + ("advantages", "weights"),
            packed=True,
        ),
        collate(
            "f06_padded_pad_equals_eos",
            ["collate-padded", "collate-padding-by-position"],
            "F06: a real EOS equal to the pad id keeps its target and is not padding",
            f06,
            {
                "input_ids": long([[5, 6, 0, 0], [7, 8, 9, 10]]),
                "attention_mask": long([[1, 1, 1, 0], [1, 1, 1, 1]]),
                "labels": long([[6, 0, X, X], [8, 9, 10, 0]]),
                "padding_mask": bools([[F, F, F, T], [F] * 4]),
                "weights": f32([[1, 1, 0, 0], [1, 1, 1, 1]]),
            },
            keys=PADDED + ("weights",),
        ),
        collate(
            "f08_packed_without_targets",
            ["collate-packed"],
            "F08: no target_tokens gives ignore_index labels",
            [D([10, 11, 2]), D([20, 21, 22, 2])],
            {
                "input_ids": long([[10, 11, 2, 20, 21, 22, 2]]),
                "labels": long([[-1] * 7]),
                "position_ids": long([[0, 1, 2, 0, 1, 2, 3]]),
                "seq_lens": long([[3, 4]]),
                "seq_lens_padded": long([[3, 4]]),
                "qkv_format": "thd",
            },
            keys=PACKED,
            packed=True,
            ignore_index=-1,
        ),
        collate(
            "f08_padded_without_targets",
            ["collate-padded", "collate-padding-by-position"],
            "F08 padded: pad value 0, padding by position, no labels key",
            [D([10, 11, 2]), D([20, 21, 22, 2])],
            {
                "input_ids": long([[10, 11, 2, 0], [20, 21, 22, 2]]),
                "attention_mask": long([[1, 1, 1, 0], [1, 1, 1, 1]]),
                "padding_mask": bools([[F, F, F, T], [F] * 4]),
            },
            keys=("input_ids", "attention_mask", "padding_mask"),
        ),
        collate(
            "f11_all_zero_weights_padded",
            ["collate-weights"],
            "F11: all-zero weights mask every label",
            [D([1, 2, 3], target_tokens=[2, 3, 4], weights=[0, 0, 0])],
            {"labels": long([[X, X, X]]), "weights": f32([[0, 0, 0]])},
        ),
        collate(
            "f11_all_zero_weights_packed",
            ["collate-weights"],
            "F11 packed",
            [D([1, 2, 3], target_tokens=[2, 3, 4], weights=[0, 0, 0])],
            {"labels": long([[X, X, X]]), "weights": f32([[0, 0, 0]])},
            packed=True,
        ),
        collate(
            "f12_packed_empty_datum_raises",
            ["collate-errors"],
            "F12: packing an empty Datum raises",
            f12,
            error=("ValueError", ()),
            packed=True,
        ),
        collate(
            "f12_padded_empty_datums_are_padding_rows",
            ["collate-empty-datum-padded", "collate-padded"],
            "F12: an empty Datum is an all-padding row in padded mode",
            f12,
            {
                "input_ids": long([[1, 2, 0], [0, 0, 0], [3, 4, 5], [0, 0, 0], [6, 0, 0]]),
                "attention_mask": long(attention),
                "padding_mask": bools([[a == 0 for a in r] for r in attention]),
            },
            keys=("input_ids", "attention_mask", "padding_mask"),
        ),
        collate(
            "f13_int32_datums_padded",
            ["collate-padded", "datum-construct"],
            "F13: int32 Datums give int64 fields",
            f13,
            {
                "input_ids": long([[11, 12, 13], [21, 22, 0]]),
                "attention_mask": long([[1, 1, 1], [1, 1, 0]]),
                "labels": long([[12, 13, X], [22, X, X]]),
                "padding_mask": bools([[F, F, F], [F, F, T]]),
                "weights": f32([[1, 1, 0], [1, 0, 0]]),
            },
            keys=PADDED + ("weights",),
        ),
        collate(
            "f13_int32_datums_packed",
            ["collate-packed", "datum-construct"],
            "F13 packed",
            f13,
            {
                "input_ids": long([[11, 12, 13, 21, 22]]),
                "labels": long([[12, 13, X, 22, X]]),
                "position_ids": long([[0, 1, 2, 0, 1]]),
                "seq_lens": long([[3, 2]]),
                "seq_lens_padded": long([[3, 2]]),
                "qkv_format": "thd",
                "weights": f32([[1, 1, 0, 1, 0]]),
            },
            keys=PACKED + ("weights",),
            packed=True,
        ),
        collate(
            "f15_pad_seq_len_divisible",
            ["collate-padded", "collate-side-inputs"],
            "F15: pad_seq_len_divisible=8 pads every per-token field",
            f15,
            {
                "input_ids": long([[11, 12, 13, 0, 0, 0, 0, 0], [21, 22, 0, 0, 0, 0, 0, 0]]),
                "labels": long([[12, 13] + [X] * 6, [22] + [X] * 7]),
                "padding_mask": bools([[F, F, F] + [T] * 5, [F, F] + [T] * 6]),
                "logprobs": f32([[-0.5, -1, -2, 0, 0, 0, 0, 0], [-0.25, -0.75, 0, 0, 0, 0, 0, 0]]),
            },
            keys=PADDED + ("logprobs", "weights"),
            pad_seq_len_divisible=8,
        ),
        collate(
            "side_input_wrong_length_is_per_sample",
            ["collate-side-inputs"],
            "A7: wrong-length value is per-sample",
            [D([1, 2, 3], logprobs=[-1.0, -2.0, -3.0]), D([4, 5], logprobs=[-4.0, -5.0, -6.0])],
            {"logprobs": f32([-1.0, -4.0])},
        ),
        collate(
            "length_one_on_one_token_is_per_token",
            ["collate-side-inputs"],
            "a length-1 value on 1-token datums",
            [D([7], advantages=[0.5]), D([8], advantages=[1.5])],
            {"advantages": f32([[0.5], [1.5]])},
        ),
    ]


def case_errors():
    return [
        collate("no_datum", ["collate-errors"], "no datum", [], error=("ValueError", ())),
        collate(
            "padded_targets_on_datum0_only",
            ["collate-errors"],
            "A9: KeyError('labels') in padded mode",
            [D([1, 2], target_tokens=[2, 3]), D([4, 5, 6])],
            error=("KeyError", ("labels",)),
        ),
        collate(
            "mixed_targets_packed",
            ["collate-errors"],
            "A9: mixed targets in packed mode",
            [D([4, 5, 6]), D([1, 2], target_tokens=[2, 3])],
            error=("ValueError", ("loss_fn_inputs",)),
            packed=True,
        ),
        collate(
            "different_side_input_keys",
            ["collate-errors"],
            "different key sets",
            [D([1, 2], target_tokens=[2, 3], weights=[1, 1]), D([4, 5], target_tokens=[5, 6], logprobs=[-1.0, -2.0])],
            error=("ValueError", ("loss_fn_inputs",)),
        ),
        collate(
            "packed_wrong_length_targets",
            ["collate-errors"],
            "packed: targets of the wrong length",
            [D([1, 2, 3], target_tokens=[2, 3]), D([4], target_tokens=[5])],
            error=("ValueError", (2, 3)),
            packed=True,
        ),
        collate(
            "weights_do_not_broadcast",
            ["collate-errors"],
            "weights that do not broadcast",
            [D([1, 2, 3], target_tokens=[2, 3, 4], weights=[1, 0])],
            error=("RuntimeError", ()),
        ),
    ]


def case_datum():
    return [
        Case(
            name="test_datum_lists_become_int64_and_float32",
            clauses=("datum-construct",),
            description="list input_ids -> int64; int lists -> int64, floats -> float32",
            function="Datum",
            inputs=D([3, 4, 5], target_tokens=[4, 5, 6], weights=[1.0, 0.5, 0.0], advantages=0.5, count=3),
            expected={
                "input_ids": long([3, 4, 5]),
                "seq_len": 3,
                "loss_fn_inputs": {
                    "target_tokens": long([4, 5, 6]),
                    "weights": f32([1.0, 0.5, 0.0]),
                    "advantages": torch.tensor(0.5),
                    "count": torch.tensor(3),
                },
            },
        ),
        Case(
            name="test_datum_keeps_tensor_dtypes",
            clauses=("datum-construct",),
            description="a tensor input_ids keeps its dtype",
            function="Datum",
            inputs=D(
                torch.tensor([11, 12, 13], dtype=torch.int32),
                logprobs=torch.tensor([-1.0, -2.0, -3.0], dtype=torch.float64),
            ),
            expected={
                "input_ids": torch.tensor([11, 12, 13], dtype=torch.int32),
                "seq_len": 3,
                "loss_fn_inputs": {"logprobs": torch.tensor([-1.0, -2.0, -3.0], dtype=torch.float64)},
            },
        ),
        Case(
            name="test_datum_empty_is_allowed",
            clauses=("datum-construct",),
            description="seq_len 0 is allowed",
            function="Datum",
            inputs={"input_ids": []},
            expected={"input_ids": torch.zeros(0, dtype=torch.int64), "seq_len": 0, "loss_fn_inputs": {}},
        ),
        Case(
            name="test_datum_rejects_2d",
            clauses=("datum-errors",),
            description="2-D input_ids",
            function="Datum",
            inputs={"input_ids": [[1, 2], [3, 4]]},
            error=("ValueError", ("input_ids", Shape(2, 2))),
        ),
        Case(
            name="test_datum_rejects_0d",
            clauses=("datum-errors",),
            description="0-D input_ids",
            function="Datum",
            inputs={"input_ids": torch.tensor(5)},
            error=("ValueError", ("input_ids", Shape())),
        ),
        Case(
            name="test_to_features_labels_from_targets_and_weights",
            clauses=("datum-to-features",),
            description="labels are target_tokens with ignore_index where weights == 0",
            function="Datum.to_features",
            inputs=EXAMPLE[0],
            options={"ignore_index": -1},
            expected={"input_ids": [10, 11, 12], "attention_mask": [1, 1, 1], "labels": [11, 12, -1]},
            keys=("input_ids", "attention_mask", "labels"),
        ),
        Case(
            name="test_to_features_without_targets",
            clauses=("datum-to-features",),
            description="no target_tokens: no labels key",
            function="Datum.to_features",
            inputs=D([4, 5]),
            expected={"input_ids": [4, 5], "attention_mask": [1, 1]},
            keys=("input_ids", "attention_mask"),
        ),
        Case(
            name="test_to_features_scalar_zero_weight",
            clauses=("datum-to-features",),
            description="a scalar weights=0 masks every label",
            function="Datum.to_features",
            inputs=D([4, 5], target_tokens=[5, 6], weights=0),
            expected={"labels": [-100, -100]},
        ),
    ]


def _random_datum(rng: random.Random, keys: tuple[str, ...], allow_empty: bool) -> dict:
    n = rng.randint(0 if allow_empty else 1, 6)
    lfi = {}
    if "target_tokens" in keys:
        lfi["target_tokens"] = [rng.randint(0, 9) for _ in range(n)]
    if "weights" in keys:
        lfi["weights"] = [rng.choice([0, 1]) for _ in range(n)]
    if "logprobs" in keys:
        lfi["logprobs"] = [rng.randint(-16, 0) / 4 for _ in range(n)]
    if "advantages" in keys:
        lfi["advantages"] = [rng.randint(-8, 8) / 4]
    return D([rng.randint(0, 9) for _ in range(n)], **lfi)


def case_collate_generated():
    rng = random.Random(20260208)
    cases = []
    key_sets = [
        (),
        ("target_tokens",),
        ("target_tokens", "weights"),
        ("target_tokens", "weights", "logprobs"),
        ("target_tokens", "weights", "advantages"),
    ]
    for i in range(12):
        packed = i % 2 == 1
        keys = key_sets[i % len(key_sets)]
        datums = [_random_datum(rng, keys, allow_empty=not packed) for _ in range(rng.randint(1, 4))]
        options = {"packed": packed, "ignore_index": rng.choice([-100, -1, 0, 7])}
        if not packed and i % 4 == 0:
            options["pad_seq_len_divisible"] = 4
        cases.append(
            collate(
                f"generated_{i:02d}",
                [
                    "collate-packed" if packed else "collate-padded",
                    "collate-weights",
                    "collate-side-inputs",
                    "collate-no-mutation",
                ],
                f"seeded random datums ({len(datums)}), keys {list(keys)}, {options}",
                datums,
                **options,
            )
        )
    return cases


def case_collaters():
    rng = random.Random(20260209)
    cases = [
        Case(
            name="test_pack_features_rejects_empty_list",
            clauses=("pack-errors",),
            description="no feature",
            function="pack_features_for_thd",
            inputs={"features": []},
            error=("ValueError", ()),
        ),
        Case(
            name="test_pack_features_rejects_empty_input_ids",
            clauses=("pack-errors",),
            description="empty input_ids",
            function="pack_features_for_thd",
            inputs={"features": [{"input_ids": []}]},
            error=("ValueError", ()),
        ),
        Case(
            name="test_pack_features_rejects_label_length",
            clauses=("pack-errors",),
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
            "labels": [2, 3, 4, -100],
            "position_ids": [0, 1, 0, 1],
            "seq_lens": [2, 2],
            "seq_lens_padded": [2, 2],
        },
        {
            "input_ids": [5, 6, 7, 8],
            "labels": [6, 7, 8, -100],
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
                "labels": long([[2, 3, 4, -100], [6, 7, 8, -100]]),
                "position_ids": long([[0, 1, 0, 1], [0, 1, 2, 3]]),
                "seq_lens": long([[2, 2], [4, -1000]]),
                "seq_lens_padded": long([[2, 2], [4, -1000]]),
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


def case_side_inputs_mixed_batch():
    # [collate-side-inputs]: per-token needs EVERY datum's value to have its datum's length, so a
    # length-1 value on a 1-token datum is per-sample when another datum's value is not per-token.
    one_and_scalar = [D([7], advantages=[0.5]), D([8, 9], advantages=[1.5])]
    one_and_full = [D([7], advantages=[0.5]), D([8, 9], advantages=[1.5, 2.5])]
    return [
        collate(
            f"length_one_on_one_token_mixed_{mode}",
            ["collate-side-inputs"],
            "a length-1 value on a 1-token datum next to a 2-token datum with one value: per-sample for both",
            one_and_scalar,
            {"advantages": f32([0.5, 1.5])},
            packed=mode == "packed",
        )
        for mode in ("padded", "packed")
    ] + [
        collate(
            "length_one_on_one_token_with_per_token_padded",
            ["collate-side-inputs", "collate-padded"],
            "a length-1 value on a 1-token datum next to a full-length one: per-token, padded with 0.0",
            one_and_full,
            {"advantages": f32([[0.5, 0.0], [1.5, 2.5]])},
        ),
        collate(
            "length_one_on_one_token_with_per_token_packed",
            ["collate-side-inputs", "collate-packed"],
            "the same, packed: concatenated to [1, 3]",
            one_and_full,
            {"advantages": f32([[0.5, 1.5, 2.5]])},
            packed=True,
        ),
    ]
