"""``vectorized``'s fast paths really run on the suite's inputs, and only its named delegations
(backends/vectorized/README.md) hand a call to the reference (issue 32: a fast path that
crashed or delegated silently would keep the output right and make the cost the reference's).

Each delegation is a predicate on the call's inputs, checked before the fast path
(``DELEGATIONS`` of backends/vectorized/collaters.py and datum.py); the README's table gives,
for each fast path and delegation, the share of the suite's calls that take it, and
``test_the_readme_shares_are_the_suites`` measures them again. Every delegation also has a
planted input here (``PLANTED``): the input class it guards, routed to it by name, with the
reference's result or error.

The counts come from the session's vectorized run (tests/conftest.py sets
``BATCHSPEC_VECTORIZED_PATHS`` for it; backends/vectorized/paths.py writes them): no extra run.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

from batchspec.backends import vectorized
from batchspec.backends.vectorized import collaters, datum, paths
from batchspec.reference import collaters as reference_collaters
from batchspec.reference import datum as reference_datum
from batchspec.reference.datum import Datum

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "backends" / "vectorized" / "README.md"

# function -> its delegations, in the order they are checked
DELEGATIONS = {**collaters.DELEGATIONS, **datum.DELEGATIONS}

# a README share may differ from the measured one by this many percentage points (the suite grows)
SHARE_TOLERANCE = 5.0

# (function, delegation) -> (args, kwargs) of a call that takes it: the input class it guards
PAD = collaters.PAD_TOKEN_IDS_KEY
PLANTED: dict[tuple[str, str], tuple[tuple, dict]] = {
    ("default_collater", "non-list-row"): (([{"input_ids": [1, 2]}, {"input_ids": (3,)}],), {}),
    ("default_collater", "odd-divisor"): (([{"input_ids": [1, 2, 3]}], 2.5), {}),
    ("default_collater", "non-int64-pad"): (
        ([{"input_ids": [1, 2], PAD: {"input_ids": 1.5}}, {"input_ids": [3]}],),
        {},
    ),
    ("default_collater", "non-int64-values"): (([{"input_ids": [1.0, 2.5]}, {"input_ids": [True]}],), {}),
    ("packed_sequence_thd_collater", "empty-or-non-list-token-rows"): (
        ([{"input_ids": (1, 2), "labels": (2, 3), "position_ids": (0, 1), "seq_lens": [2], "seq_lens_padded": [2]}],),
        {},
    ),
    ("packed_sequence_thd_collater", "non-int64-token-rows"): (
        (
            [
                {
                    "input_ids": [1.0, 2.0],
                    "labels": [2, 3],
                    "position_ids": [0, 1],
                    "seq_lens": [2],
                    "seq_lens_padded": [2],
                }
            ],
        ),
        {},
    ),
    ("packed_sequence_thd_collater", "non-list-length-row"): (
        ([{"input_ids": [1, 2], "labels": [2, 3], "position_ids": [0, 1], "seq_lens": (2,), "seq_lens_padded": [2]}],),
        {},
    ),
    ("packed_sequence_thd_collater", "non-int64-lengths"): (
        ([{"input_ids": [1, 2], "labels": [2, 3], "position_ids": [0, 1], "seq_lens": [2.0], "seq_lens_padded": [2]}],),
        {},
    ),
    ("packed_sequence_thd_collater", "all-items-empty"): (([{"input_ids": [], "labels": []}],), {}),
    ("packed_sequence_thd_collater", "non-int64-pad"): (
        ([{"input_ids": [1, 2], "labels": [2, 3], PAD: {"input_ids": 1.5}}, {"input_ids": [4], "labels": [5]}],),
        {},
    ),
    ("packed_sequence_thd_collater", "labels-of-another-length"): (([{"input_ids": [1, 2], "labels": [2]}],), {}),
    ("packed_sequence_thd_collater", "tensor-row-not-cpu-int64"): (
        ([{"input_ids": torch.tensor([1, 2], dtype=torch.int32), "labels": torch.tensor([2, 3], dtype=torch.int32)}],),
        {},
    ),
    ("packed_sequence_thd_collater", "non-list-row"): (([{"input_ids": (1, 2), "labels": [2, 3]}],), {}),
    ("packed_sequence_thd_collater", "non-int64-values"): (([{"input_ids": [1.0, 2.0], "labels": [2, 3]}],), {}),
    ("packed_sequence_thd_collater", "non-int-mask"): (
        ([{"input_ids": [1, 2], "labels": [2, 3], "attention_mask": [1.0, 0.5]}],),
        {},
    ),
    ("collate_datums", "odd-ignore-index"): (
        ([Datum([1, 2], {"target_tokens": [2, 3], "weights": [1, 0]})],),
        {"ignore_index": -100.0},
    ),
    ("collate_datums", "different-key-sets"): (([Datum([1, 2], {"target_tokens": [2, 3]}), Datum([4], {})],), {}),
    ("collate_datums", "odd-token-dtype"): (([Datum(torch.tensor([1.0, 2.0]), {"target_tokens": [2, 3]})],), {}),
    ("collate_datums", "targets-of-another-shape"): (([Datum([1, 2], {"target_tokens": [2, 3, 4]})],), {}),
    ("collate_datums", "non-integer-targets"): (([Datum([1, 2], {"target_tokens": [2.0, 3.5]})],), {}),
    ("collate_datums", "weights-elsewhere-or-ignore-index-overflow"): (
        ([Datum([1, 2], {"target_tokens": torch.tensor([2, 3], dtype=torch.uint8), "weights": [1, 0]})],),
        {},
    ),
    ("collate_datums", "weights-of-another-shape"): (
        ([Datum([1, 2], {"target_tokens": [2, 3], "weights": [1, 0, 1]})],),
        {},
    ),
    ("collate_datums", "odd-divisor"): (
        ([Datum([1, 2, 3], {"target_tokens": [2, 3, 4]})],),
        {"pad_seq_len_divisible": 2.5},
    ),
}

REFERENCE = {
    "default_collater": reference_collaters.default_collater,
    "packed_sequence_thd_collater": reference_collaters.packed_sequence_thd_collater,
    "collate_datums": reference_datum.collate_datums,
}

_ROW = re.compile(r"^\| `([a-z_]+)` \| `([a-z0-9-]+)` \| ([0-9.]+)% ", flags=re.MULTILINE)


def readme_shares() -> dict[tuple[str, str], float]:
    """(function, path) -> the share (percent) of the function's calls in the suite the README gives."""
    return {(f, p): float(share) for f, p, share in _ROW.findall(README.read_text(encoding="utf-8"))}


def counts(folder: Path) -> Counter[str]:
    """``function:path`` -> calls, summed over the run's processes."""
    total: Counter[str] = Counter()
    for line in (folder / "paths.jsonl").read_text(encoding="utf-8").splitlines():
        total.update(json.loads(line))
    return total


def measured_shares(found: Counter[str]) -> dict[tuple[str, str], float]:
    """(function, path) -> percent of the function's calls, for every path the README may list."""
    shares = {}
    for function, delegations in DELEGATIONS.items():
        calls = sum(n for key, n in found.items() if key.startswith(f"{function}:"))
        for path in [paths.FAST, *(name for name, _ in delegations)]:
            shares[function, path] = 100.0 * found[f"{function}:{path}"] / max(calls, 1)
    return shares


def test_each_function_names_each_delegation_once():
    for function, delegations in DELEGATIONS.items():
        names = [name for name, _ in delegations]
        assert len(names) == len(set(names)), function


def test_the_readme_lists_every_fast_path_and_delegation():
    listed = set(readme_shares())
    assert listed, "no row found: the pattern no longer reads the README's table"
    expected = {(f, paths.FAST) for f in DELEGATIONS} | {(f, n) for f, ds in DELEGATIONS.items() for n, _ in ds}
    assert listed == expected


def test_the_readme_shares_are_the_suites(vectorized_run):
    assert vectorized_run.returncode == 0, vectorized_run.output[-3000:]
    assert vectorized_run.folder is not None
    found = counts(vectorized_run.folder)
    assert {key.split(":")[0] for key in found} == set(DELEGATIONS), dict(found)
    for function in DELEGATIONS:
        calls = sum(n for key, n in found.items() if key.startswith(f"{function}:"))
        assert calls >= 100, f"{function}: only {calls} calls in the suite's run"
    measured = measured_shares(found)
    for key in found:
        function, path = key.split(":")
        assert (function, path) in measured, f"{key}: not a path of {function}"
    for key, share in readme_shares().items():
        if share == 0:
            assert measured[key] == 0, f"{key}: README says the suite never takes it, measured {measured[key]:.1f}%"
        else:
            assert measured[key] > 0, f"{key}: README says {share}%, the suite never takes it"
            assert abs(measured[key] - share) <= SHARE_TOLERANCE, (
                f"{key}: README {share}%, measured {measured[key]:.1f}%"
            )


def test_the_reader_counts_a_planted_file(tmp_path):
    (tmp_path / "paths.jsonl").write_text('{"collate_datums:fast": 3}\n{"collate_datums:fast": 2, "x:y": 1}\n')
    assert counts(tmp_path) == Counter({"collate_datums:fast": 5, "x:y": 1})


def test_every_delegation_has_a_planted_input():
    assert set(PLANTED) == {(f, n) for f, ds in DELEGATIONS.items() for n, _ in ds}


def _outcome(call) -> Any:
    try:
        return call()
    except Exception as error:  # the outcome compared: the error's type
        return type(error)


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return list(ours) == list(theirs) and all(_same(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, torch.Tensor) and isinstance(theirs, torch.Tensor):
        return ours.dtype == theirs.dtype and ours.shape == theirs.shape and torch.equal(ours, theirs)
    return ours == theirs


@pytest.mark.parametrize(("function", "name"), sorted(PLANTED))
def test_a_planted_input_takes_its_delegation_and_gets_the_references_outcome(function, name):
    args, kwargs = PLANTED[function, name]
    assert paths.choose(function, DELEGATIONS[function], *_choice_args(function, args, kwargs)) == name
    ours = _outcome(lambda: getattr(vectorized, function)(*args, **kwargs))
    theirs = _outcome(lambda: REFERENCE[function](*args, **kwargs))
    assert _same(ours, theirs), f"{function} / {name}: {ours!r} vs the reference's {theirs!r}"


def _choice_args(function: str, args: tuple, kwargs: dict) -> tuple:
    """The arguments ``paths.choose`` passes the function's predicates."""
    if function == "collate_datums":
        return (
            args[0],
            kwargs.get("packed", False),
            kwargs.get("pad_seq_len_divisible"),
            kwargs.get("ignore_index", datum.CROSS_ENTROPY_IGNORE_IDX),
        )
    if function == "default_collater":
        return (args[0], args[1] if len(args) > 1 else None)
    return args


def test_an_empty_per_sample_side_input_is_the_fast_paths_index_error():
    # out of contract (SPEC section 8); no longer delegated: the fast path raises upstream's IndexError
    datums = [Datum([1, 2], {"advantages": [0.5]}), Datum([3], {"advantages": torch.zeros(0)})]
    assert paths.choose("collate_datums", DELEGATIONS["collate_datums"], datums, False, None, -100) is None
    with pytest.raises(IndexError, match="advantages"):
        vectorized.collate_datums(datums)
    with pytest.raises(IndexError):
        reference_datum.collate_datums(datums)


def test_a_fast_path_that_fails_half_way_raises_instead_of_delegating(monkeypatch):
    # the predicates chose the fast path before any work; a failure inside it is a real error
    def broken(*args, **kwargs):
        raise RuntimeError("planted failure inside the fast path")

    monkeypatch.setattr(collaters, "_scatter_rows", broken)
    monkeypatch.setattr(datum, "_labels", broken)
    with pytest.raises(RuntimeError, match="planted"):
        vectorized.default_collater([{"input_ids": [1, 2]}, {"input_ids": [3]}])
    with pytest.raises(RuntimeError, match="planted"):
        vectorized.packed_sequence_thd_collater([{"input_ids": [1, 2], "labels": [2, 3]}])
    with pytest.raises(RuntimeError, match="planted"):
        vectorized.collate_datums([Datum([1, 2], {"target_tokens": [2, 3]})])


@pytest.mark.parametrize(
    ("function", "batch"),
    [
        ("default_collater", [{"input_ids": [1, 2**63]}, {"input_ids": [3]}]),
        ("packed_sequence_thd_collater", [{"input_ids": [1, -(2**63) - 1], "labels": [2, 3]}]),
        (
            "packed_sequence_thd_collater",
            [
                {
                    "input_ids": [1, 2**64],
                    "labels": [2, 3],
                    "position_ids": [0, 1],
                    "seq_lens": [2],
                    "seq_lens_padded": [2],
                }
            ],
        ),
    ],
)
def test_a_value_outside_int64_is_the_fast_paths_value_error(function, batch):
    # upstream's torch.tensor refuses it with a ValueError; the fast path raises it itself, naming the field
    assert paths.choose(function, DELEGATIONS[function], *_choice_args(function, (batch,), {})) is None
    with pytest.raises(ValueError, match="outside the int64 range"):
        getattr(vectorized, function)(batch)
    with pytest.raises(ValueError):
        REFERENCE[function](batch)
