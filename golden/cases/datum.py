"""Golden cases for SPEC.md's "``Datum`` and the canonical collaters", its ``Datum`` part:
``Datum``, ``to_features`` and ``collate_datums`` (Examples I and J, the field reports'
``collate_datums`` parts, A6-A9).
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
    Case,
    Shape,
    bools,
    f32,
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


# Example I padded to width 4: the longest datum (3 tokens) rounded up to a multiple of 2 or 4.
EXAMPLE_I_WIDTH_4 = {
    "input_ids": long([[10, 11, 12, 0], [20, 21, 0, 0]]),
    "attention_mask": long([[1, 1, 1, 0], [1, 1, 0, 0]]),
    "labels": long([[11, 12, X, X], [X, 22, X, X]]),
    "padding_mask": bools([[F, F, F, T], [F, F, T, T]]),
    "advantages": f32([0.5, -1.5]),
    "logprobs": f32([[-0.5, -1, -2, 0], [-0.25, -0.75, 0, 0]]),
    "weights": f32([[1, 1, 0, 0], [0, 1, 0, 0]]),
}


def case_divisible_at_its_bound():
    """[collate-padded]'s width W at ``pad_seq_len_divisible``'s bound (issue 31): Example I's
    longest datum (3 tokens) is exactly a multiple of 1 (the smallest divisor) and of 3, so W stays
    3; it is one past a multiple of 2, so W is rounded up to 4 (a remainder of 1 rounds up like any
    other)."""
    return [
        *(
            collate(
                f"example_i_divisible_{divisible}_exact",
                ["collate-padded", "collate-side-inputs", "collate-weights"],
                f"Example I, pad_seq_len_divisible={divisible}: the longest datum (3 tokens) is a multiple of "
                f"{divisible}, so the width stays 3",
                EXAMPLE,
                EXAMPLE_I,
                keys=PADDED + SIDE,
                pad_seq_len_divisible=divisible,
            )
            for divisible in (1, 3)
        ),
        collate(
            "example_i_divisible_2_one_past",
            ["collate-padded", "collate-side-inputs", "collate-weights"],
            "Example I, pad_seq_len_divisible=2: the longest datum (3 tokens) is one past a multiple of 2, so the "
            "width is rounded up to 4",
            EXAMPLE,
            EXAMPLE_I_WIDTH_4,
            keys=PADDED + SIDE,
            pad_seq_len_divisible=2,
        ),
        collate(
            "example_i_divisible_minus_2_one_past",
            ["collate-padded", "collate-side-inputs", "collate-weights"],
            "Example I, pad_seq_len_divisible=-2: the longest datum (3 tokens) is rounded up to a multiple of 2, "
            "its absolute value, so the width is 4 (SPEC 1.5's clarification; upstream's ceil(3 / -2) * -2 gives 2)",
            EXAMPLE,
            EXAMPLE_I_WIDTH_4,
            keys=PADDED + SIDE,
            pad_seq_len_divisible=-2,
        ),
        collate(
            "divisible_minus_2_exact",
            ["collate-padded"],
            "pad_seq_len_divisible=-2, the longest datum 4 tokens: already a multiple of 2 (|-2|), so the width "
            "stays 4",
            [D([1, 2, 3, 4], target_tokens=[2, 3, 4, 5]), D([6], target_tokens=[7])],
            {
                "input_ids": long([[1, 2, 3, 4], [6, 0, 0, 0]]),
                "attention_mask": long([[1, 1, 1, 1], [1, 0, 0, 0]]),
                "labels": long([[2, 3, 4, 5], [7, X, X, X]]),
                "padding_mask": bools([[F, F, F, F], [F, T, T, T]]),
            },
            keys=PADDED,
            pad_seq_len_divisible=-2,
        ),
    ]


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
    lfi: dict[str, list[int] | list[float]] = {}
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
