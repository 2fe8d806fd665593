"""Golden cases for SPEC.md's "``Datum`` and the canonical collaters": ``Datum``,
``to_features``, ``collate_datums`` (Examples I and J, the field reports' ``collate_datums``
parts, A6-A9) and the canonical collaters (``default_collater``,
``packed_sequence_thd_collater``, ``pack_features_for_thd``).
Canon literals are written by hand from that section, whose rules follow upstream
nemo-automodel 0.7.0 (docs/sources.md#nemo-automodel); this module is their only home.
Generated cases are seeded random datums and features whose expected values come from the
reference.
"""

from __future__ import annotations

import random

import torch

from batchspec.conformance.golden.api import (
    IGNORE_INDEX,
    PAD_TOKEN_IDS_KEY,
    THD_PAD,
    Case,
    Shape,
    bools,
    f32,
    int32,
    long,
)

F, T = False, True
X = IGNORE_INDEX
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
            ["collate-padded", "collate-side-inputs", "collate-weights"],
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
        *(
            collate(
                f"example_j_packed_divisible{'' if divisible == 8 else f'_{divisible}'}_ignored",
                ["collate-packed", "collate-side-inputs", "collate-weights"],
                f"Example J: pad_seq_len_divisible={divisible} is ignored",
                EXAMPLE,
                EXAMPLE_J,
                keys=PACKED + SIDE,
                packed=True,
                pad_seq_len_divisible=divisible,
            )
            for divisible in (4, 8)
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
            "options_are_keyword_only_two",
            ["collate-keyword-only"],
            "packed and pad_seq_len_divisible passed positionally raise TypeError",
            EXAMPLE,
            error=("TypeError", ()),
            positional=[False, 4],
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
    f05_per_sample = [
        D([50, 51, 52], target_tokens=[51, 52, 0], advantages=[1.0], weights=[1, 1, 0]),
        D([60, 61], target_tokens=[61, 0], advantages=[-0.5], weights=[1, 0]),
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
            ["collate-padded", "collate-padding-by-position", "collate-weights"],
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
            ["collate-weights", "collate-padded", "collate-side-inputs"],
            "F11: all-zero weights mask every label",
            [D([1, 2, 3], target_tokens=[2, 3, 4], weights=[0, 0, 0])],
            {"labels": long([[X, X, X]]), "weights": f32([[0, 0, 0]])},
        ),
        collate(
            "f11_all_zero_weights_packed",
            ["collate-weights", "collate-packed", "collate-side-inputs"],
            "F11 packed",
            [D([1, 2, 3], target_tokens=[2, 3, 4], weights=[0, 0, 0])],
            {"labels": long([[X, X, X]]), "weights": f32([[0, 0, 0]])},
            packed=True,
        ),
        collate(
            "f12_packed_empty_datum_raises",
            ["collate-errors", "collate-errors.2", "collate-packed"],
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
                "attention_mask": long([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]]),
                "labels": long([[12, 13] + [X] * 6, [22] + [X] * 7]),
                "padding_mask": bools([[F, F, F] + [T] * 5, [F, F] + [T] * 6]),
                "logprobs": f32([[-0.5, -1, -2, 0, 0, 0, 0, 0], [-0.25, -0.75, 0, 0, 0, 0, 0, 0]]),
                "weights": f32([[1, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0]]),
            },
            keys=PADDED + ("logprobs", "weights"),
            pad_seq_len_divisible=8,
        ),
        collate(
            "f15_packed_ignores_the_divisor",
            ["collate-packed"],
            "F15: packed=True ignores pad_seq_len_divisible=8 (width 5, not 8)",
            f15,
            {
                "input_ids": long([[11, 12, 13, 21, 22]]),
                "labels": long([[12, 13, X, 22, X]]),
                "position_ids": long([[0, 1, 2, 0, 1]]),
                "seq_lens": long([[3, 2]]),
                "seq_lens_padded": long([[3, 2]]),
                "qkv_format": "thd",
                "logprobs": f32([[-0.5, -1, -2, -0.25, -0.75]]),
                "weights": f32([[1, 1, 0, 1, 0]]),
            },
            keys=PACKED + ("logprobs", "weights"),
            packed=True,
            pad_seq_len_divisible=8,
        ),
        collate(
            "f08_packed_without_targets_default_ignore_index",
            ["collate-packed"],
            "F08: no target_tokens gives labels that are all the default ignore_index",
            [D([10, 11, 2]), D([20, 21, 22, 2])],
            {
                "input_ids": long([[10, 11, 2, 20, 21, 22, 2]]),
                "labels": long([[X] * 7]),
                "position_ids": long([[0, 1, 2, 0, 1, 2, 3]]),
                "seq_lens": long([[3, 4]]),
                "seq_lens_padded": long([[3, 4]]),
                "qkv_format": "thd",
            },
            keys=PACKED,
            packed=True,
            ignore_index=X,
        ),
        *(
            collate(
                f"f05_per_sample_advantages_{mode}",
                ["collate-side-inputs", f"collate-{mode}"],
                f"F05 per-sample variant, {mode}: advantages [1.0] and [-0.5] stack to shape [2]; weights stay "
                "per-token",
                f05_per_sample,
                {"advantages": f32([1.0, -0.5]), "weights": weights},
                packed=mode == "packed",
            )
            for mode, weights in (("packed", f32([[1, 1, 0, 1, 0]])), ("padded", f32([[1, 1, 0], [1, 0, 0]])))
        ),
        collate(
            "f05_pitfall_without_weights_trains_placeholder_targets",
            ["collate-packed", "collate-weights"],
            "F05 pitfall (upstream, kept): without weights the placeholder last targets are labels",
            [D(d["input_ids"], **{k: v for k, v in d["loss_fn_inputs"].items() if k != "weights"}) for d in f05],
            {"labels": long([[51, 52, 0, 61, 0]])},
            keys=PACKED + ("advantages",),
            packed=True,
        ),
        *(
            collate(
                f"side_input_wrong_length_is_per_sample{'_packed' if packed else ''}",
                ["collate-side-inputs"],
                f"A7: a value whose length is not its datum's seq_len makes the key per-sample (first elements), "
                f"packed={packed}",
                [D([1, 2, 3], logprobs=[-1.0, -2.0, -3.0]), D([4, 5], logprobs=[-4.0, -5.0, -6.0])],
                {"logprobs": f32([-1.0, -4.0])},
                packed=packed,
            )
            for packed in (False, True)
        ),
        collate(
            "length_one_on_one_token_is_per_token",
            ["collate-side-inputs"],
            "a length-1 value on 1-token datums",
            [D([7], advantages=[0.5]), D([8], advantages=[1.5])],
            {"advantages": f32([[0.5], [1.5]])},
        ),
        collate(
            "length_one_on_one_token_is_per_token_packed",
            ["collate-side-inputs"],
            "a length-1 value on 1-token datums, packed: concatenated to [1, 2]",
            [D([7], advantages=[0.5]), D([8], advantages=[1.5])],
            {"advantages": f32([[0.5, 1.5]])},
            packed=True,
        ),
        *(
            collate(
                f"length_one_next_to_a_scalar_{mode}",
                ["collate-side-inputs"],
                f"advantages [0.5] on 1 token next to a 0-D 1.5 on 2 tokens, {mode}: per-sample for both",
                [D([7], advantages=[0.5]), D([8, 9], advantages=1.5)],
                {"advantages": f32([0.5, 1.5])},
                packed=mode == "packed",
            )
            for mode in ("padded", "packed")
        ),
        *(
            collate(
                f"side_inputs_are_flattened_float32_{mode}",
                ["collate-side-inputs", f"collate-{mode}"],
                f"float64 [T, 1] logprobs and an int mask, {mode}: float32, flattened, per-token",
                [
                    D([1, 2], logprobs=torch.tensor([[-1.0], [-2.0]], dtype=torch.float64), mask=[1, 0]),
                    D([3], logprobs=[[-3.0]], mask=[1]),
                ],
                expected,
                keys=keys,
                packed=mode == "packed",
            )
            for mode, expected, keys in (
                (
                    "padded",
                    {"logprobs": f32([[-1.0, -2.0], [-3.0, 0.0]]), "mask": f32([[1, 0], [1, 0]])},
                    ("input_ids", "attention_mask", "padding_mask", "logprobs", "mask"),
                ),
                (
                    "packed",
                    {"logprobs": f32([[-1.0, -2.0, -3.0]]), "mask": f32([[1, 0, 1]])},
                    PACKED + ("logprobs", "mask"),
                ),
            )
        ),
    ]


def case_errors():
    return [
        collate("no_datum", ["collate-errors", "collate-errors.1"], "no datum", [], error=("ValueError", ())),
        collate(
            "no_datum_packed",
            ["collate-errors", "collate-errors.1"],
            "no datum, packed",
            [],
            error=("ValueError", ()),
            packed=True,
        ),
        collate(
            "padded_targets_on_datum0_only",
            # item 2's KeyError needs a later datum without target_tokens, whose key set then differs
            # (item 3): an order case, cited by its clause only
            ["collate-errors"],
            "A9: KeyError('labels') in padded mode",
            [D([1, 2], target_tokens=[2, 3]), D([4, 5, 6])],
            error=("KeyError", ("labels",)),
        ),
        collate(
            "mixed_targets_packed",
            ["collate-errors", "collate-errors.3"],
            "A9: mixed targets in packed mode",
            [D([4, 5, 6]), D([1, 2], target_tokens=[2, 3])],
            error=("ValueError", ("loss_fn_inputs",)),
            packed=True,
        ),
        collate(
            "mixed_targets_later_datum_has_them",
            ["collate-errors", "collate-errors.3"],
            "A9: padded, a later datum has target_tokens and datum 0 not: the same-keys check's ValueError",
            [D([4, 5, 6]), D([1, 2], target_tokens=[2, 3])],
            error=("ValueError", ("loss_fn_inputs",)),
        ),
        collate(
            "mixed_targets_packed_first_has_them",
            ["collate-errors", "collate-errors.3"],
            "A9: packed, datum 0 has target_tokens and a later one not: ValueError naming loss_fn_inputs",
            [D([1, 2], target_tokens=[2, 3]), D([4, 5, 6])],
            error=("ValueError", ("loss_fn_inputs",)),
            packed=True,
        ),
        collate(
            "different_side_input_keys",
            ["collate-errors", "collate-errors.3"],
            "different key sets",
            [D([1, 2], target_tokens=[2, 3], weights=[1, 1]), D([4, 5], target_tokens=[5, 6], logprobs=[-1.0, -2.0])],
            error=("ValueError", ("loss_fn_inputs",)),
        ),
        collate(
            "different_side_input_keys_packed",
            ["collate-errors", "collate-errors.3"],
            "different key sets, packed",
            [D([1, 2], target_tokens=[2, 3], weights=[1, 1]), D([4, 5], target_tokens=[5, 6], logprobs=[-1.0, -2.0])],
            error=("ValueError", ("loss_fn_inputs",)),
            packed=True,
        ),
        collate(
            "packed_wrong_length_targets",
            ["collate-errors", "collate-errors.2"],
            "packed: targets of the wrong length",
            [D([1, 2, 3], target_tokens=[2, 3]), D([4], target_tokens=[5])],
            error=("ValueError", (2, 3)),
            packed=True,
        ),
        collate(
            "weights_do_not_broadcast",
            ["collate-errors", "collate-errors.2"],
            "weights that do not broadcast",
            [D([1, 2, 3], target_tokens=[2, 3, 4], weights=[1, 0])],
            error=("RuntimeError", ()),
        ),
        collate(
            "weights_do_not_broadcast_packed",
            ["collate-errors", "collate-errors.2"],
            "weights that do not broadcast, packed",
            [D([1, 2, 3], target_tokens=[2, 3, 4], weights=[1, 0])],
            error=("RuntimeError", ()),
            packed=True,
        ),
        # A9's order: step (1) first of all, then the errors of step (2) before the same-keys check (3).
        # (An empty datum with different key sets raises ValueError from (2) or (3) alike; nothing the
        # clause asks a message to name tells them apart, so the order is pinned on the two inputs
        # below, whose step-(2) errors are told apart by their type or named facts.)
        collate(
            "error_order_length_before_keys",
            ["collate-errors"],
            "wrong-length targets and different key sets, packed: the labels length error (naming 2 and 3) comes first",
            [D([1, 2, 3], target_tokens=[2, 3]), D([4], target_tokens=[5], weights=[1])],
            error=("ValueError", (2, 3)),
            packed=True,
        ),
        collate(
            "error_order_broadcast_before_keys",
            ["collate-errors"],
            "weights that do not broadcast and different key sets, padded: RuntimeError comes first",
            [D([1, 2, 3], target_tokens=[2, 3, 4], weights=[1, 0]), D([4], target_tokens=[5])],
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
            description="a tensor input_ids keeps its dtype (int32 stays int32); tensor loss_fn_inputs are kept",
            function="Datum",
            inputs=D(
                torch.tensor([11, 12, 13], dtype=torch.int32),
                target_tokens=torch.tensor([12, 13, 0], dtype=torch.int32),
                logprobs=torch.tensor([-1.0, -2.0, -3.0], dtype=torch.float64),
            ),
            expected={
                "input_ids": torch.tensor([11, 12, 13], dtype=torch.int32),
                "seq_len": 3,
                "loss_fn_inputs": {
                    "target_tokens": torch.tensor([12, 13, 0], dtype=torch.int32),
                    "logprobs": torch.tensor([-1.0, -2.0, -3.0], dtype=torch.float64),
                },
            },
        ),
        Case(
            name="test_datum_float_weights_become_float32",
            clauses=("datum-construct",),
            description="list weights [1.0, 0.0, 1.0] become float32 in the Datum's own mapping",
            function="Datum",
            inputs=D([3, 4, 5], target_tokens=[4, 5, 6], weights=[1.0, 0.0, 1.0], advantages=0.5),
            expected={"loss_fn_inputs": {"weights": f32([1.0, 0.0, 1.0])}},
        ),
        Case(
            name="test_datum_empty_is_allowed",
            clauses=("datum-construct",),
            description="seq_len 0 is allowed",
            function="Datum",
            inputs={"input_ids": []},
            expected={"input_ids": torch.zeros(0, dtype=torch.int64), "seq_len": 0, "loss_fn_inputs": {}},
        ),
        *(
            Case(
                name=f"test_datum_seq_len_{name}",
                clauses=("datum-construct",),
                description=f"seq_len is the Python int input_ids.shape[0]: {length} for {name.replace('_', ' ')}",
                function="Datum",
                inputs={"input_ids": ids},
                expected={"seq_len": length},
            )
            for name, ids, length in (
                ("list_of_3", [4, 5, 6], 3),
                ("list_of_1", [9], 1),
                ("empty_int32_tensor", torch.zeros(0, dtype=torch.int32), 0),
                ("arange_5", torch.arange(5), 5),
            )
        ),
        Case(
            name="test_datum_rejects_an_int",
            clauses=("datum-errors",),
            description="an int input_ids is 0-D",
            function="Datum",
            inputs={"input_ids": 5},
            error=("ValueError", ("input_ids", Shape())),
        ),
        Case(
            name="test_datum_rejects_a_2d_tensor",
            clauses=("datum-errors",),
            description="a [1, 3] tensor input_ids is 2-D",
            function="Datum",
            inputs={"input_ids": torch.zeros(1, 3, dtype=torch.int64)},
            error=("ValueError", ("input_ids", Shape(1, 3))),
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
            name="test_to_features_default_ignore_index",
            clauses=("datum-to-features",),
            description="Example I's d1: labels are target_tokens with the default ignore_index where weights == 0; "
            "side inputs are not emitted",
            function="Datum.to_features",
            inputs=EXAMPLE[0],
            expected={"input_ids": [10, 11, 12], "attention_mask": [1, 1, 1], "labels": [11, 12, X]},
            keys=("input_ids", "attention_mask", "labels"),
        ),
        Case(
            name="test_to_features_without_targets_ignores_weights",
            clauses=("datum-to-features",),
            description="no target_tokens: no labels key, even when weights are present",
            function="Datum.to_features",
            inputs=D([5, 0, 7], weights=[0, 0, 0], logprobs=[-1.0, -2.0, -3.0]),
            options={"ignore_index": -1},
            expected={"input_ids": [5, 0, 7], "attention_mask": [1, 1, 1]},
            keys=("input_ids", "attention_mask"),
        ),
        Case(
            name="test_to_features_of_an_empty_datum",
            clauses=("datum-to-features",),
            description="an empty Datum gives empty lists",
            function="Datum.to_features",
            inputs={"input_ids": []},
            expected={"input_ids": [], "attention_mask": []},
            keys=("input_ids", "attention_mask"),
        ),
        Case(
            name="test_to_features_of_int32_tensors",
            clauses=("datum-to-features",),
            description="int32 tensor fields come out as lists of Python ints",
            function="Datum.to_features",
            inputs=D(torch.tensor([4, 5], dtype=torch.int32), target_tokens=torch.tensor([5, 6], dtype=torch.int32)),
            expected={"input_ids": [4, 5], "attention_mask": [1, 1], "labels": [5, 6]},
            keys=("input_ids", "attention_mask", "labels"),
        ),
        *(
            Case(
                name=f"test_to_features_weights_{name}",
                clauses=("datum-to-features",),
                description=f"weights {name.replace('_', ' ')}, ignore_index {ignore_index}: labels {labels} "
                "(a scalar broadcasts; a nonzero weight keeps the target)",
                function="Datum.to_features",
                inputs=D([1, 2, 3], target_tokens=[2, 3, 4], **({} if weights is None else {"weights": weights})),
                options={"ignore_index": ignore_index},
                expected={"labels": labels},
            )
            for name, weights, ignore_index, labels in (
                ("scalar_0", 0, X, [X, X, X]),
                ("scalar_0_0_ignore_index_7", 0.0, 7, [7, 7, 7]),
                ("scalar_1", 1, X, [2, 3, 4]),
                ("absent", None, X, [2, 3, 4]),
                ("floats", [0.5, 0.0, 2.0], -1, [2, -1, 4]),
            )
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
            expected={"labels": [X, X]},
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
        options = {"packed": packed, "ignore_index": rng.choice([X, -1, 0, 7])}
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
    for divisible, width in ((None, 3), (1, 3), (3, 3), (4, 4), (5, 5), (8, 8)):
        for keyword in (False, True):
            cases.append(
                _dcoll(
                    f"pad_seq_len_divisible_{divisible}{'_keyword' if keyword else ''}",
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
