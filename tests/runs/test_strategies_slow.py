"""The slow half of ``tests/unit/test_strategies.py``: the id masks' kinds (600 masks, some of
thousands of ids) and the searches for rare draws (two-row many-subdocument batches, an id past
int16's largest value).
"""

from __future__ import annotations

from collections import Counter

import torch
from _draws import EXAMPLES, can_draw, draw_many, missing

from batchspec.conformance.helpers import strategies as cs


def test_packed_batches_draw_two_row_many_subdocument_batches():
    """ "the second, when there is one, another such row or a packed_rows row of the same L"."""
    can_draw(cs.packed_batches(), lambda drawn: len(drawn.rows[0].tokens) > cs.MAX_LEN and len(drawn.rows) == 2)


def near_edge(value: int) -> bool:
    """``value`` is an edge id of ``_id_row``'s jumps or up to two below it."""
    return any(edge - 2 <= value <= edge for edge in cs.NARROW_EDGE_IDS + cs.INT16_EDGE_IDS)


def test_id_masks_are_in_contract_and_cover_their_kinds():
    kinds: Counter = Counter()
    for mask in draw_many(cs.id_masks(), 600):
        assert isinstance(mask, torch.Tensor) and mask.dim() == 2, mask
        batch_size, sequence_length = mask.shape
        if sequence_length > cs.MAX_LEN:  # "many ids": B in 1..2, S in 150..MANY_LEN
            assert batch_size <= 2 and 150 <= sequence_length <= cs.MANY_LEN, mask.shape
        else:
            assert 1 <= batch_size <= cs.MAX_BATCH and 1 <= sequence_length <= cs.MAX_LEN, mask.shape
        assert mask.dtype in (torch.int64, torch.int32, torch.bool), mask.dtype
        assert bool((mask != 0).any()), f"{mask}: no nonzero entry"
        kinds[f"dtype={mask.dtype}"] += 1
        kinds[f"B={batch_size}"] += 1
        kinds[f"S={sequence_length}"] += 1
        rows = mask.to(torch.int64).tolist()
        kinds["an empty row beside a non-empty one"] += any(not any(r) for r in rows)
        if mask.dtype == torch.bool:
            continue
        lowest = torch.iinfo(mask.dtype).min
        negatives = {v for r in rows for v in r if v < 0}
        assert negatives <= {v if v is not None else lowest for v in cs.NEGATIVE_MASK_VALUES}, negatives
        largest = int(mask.max())
        kinds["binary (only 0 and 1)"] += largest == 1 and not negatives
        kinds["negative entries"] += bool(negatives)
        kinds["binary, with negative entries"] += largest <= 1 and bool(negatives)
        kinds["only zeros and negative values"] += largest <= 0
        kinds["the dtype's minimum"] += lowest in negatives
        kinds["a binary row with a negative entry beside an indexed row"] += largest >= 2 and any(
            r and max(r) <= 1 and min(r) < 0 for r in rows
        )
        kinds["a binary row beside an indexed row"] += largest >= 2 and any(any(r) and max(r) <= 1 for r in rows)
        kinds["ids 127 and 128 in a row"] += any(127 in r and 128 in r for r in rows)
        kinds["ids 255 and 256 in a row"] += any(255 in r and 256 in r for r in rows)
        for row in rows:
            ids = [v for v in row if v > 0]
            # 1-based, non-decreasing along the row (each id one run); a new id skips at most one,
            # or jumps to an edge id (or up to two below it); a negative entry may hide ids
            assert all(b >= a for a, b in zip(ids, ids[1:])), f"{row}: ids decrease"
            if min(row) >= 0:
                assert not ids or ids[0] in (1, 2) or near_edge(ids[0]), f"{row}: the first id is {ids[0]}"
                steps = {(a, b) for a, b in zip(ids, ids[1:]) if b - a > 2}
                assert all(near_edge(b) for _, b in steps), f"{row}: a new id skips more than one, not to an edge"
            kinds["gapped (an id skipped)"] += any(b - a == 2 for a, b in zip(ids, ids[1:]))
            kinds["first id 2"] += bool(ids) and ids[0] == 2
            kinds["three or more ids in a row"] += len(set(ids)) >= 3
            kinds["more than 127 ids in a row"] += len(set(ids)) > 127
            kinds["zero inside one id's run"] += any(
                row[k] == 0 and row[k - 1] and row[k - 1] == next((v for v in row[k:] if v), None)
                for k in range(1, len(row))
            )
            kinds["leading zero"] += len(row) > 1 and row[0] == 0 and bool(ids)
            kinds["trailing zero"] += len(row) > 1 and row[-1] == 0 and bool(ids)
            kinds["a row of only negative values"] += bool(row) and all(v < 0 for v in row)
    claimed = [
        "dtype=torch.int64",
        "dtype=torch.int32",
        "dtype=torch.bool",
        "B=1",
        f"B={cs.MAX_BATCH}",
        "S=1",
        f"S={cs.MAX_LEN}",
        "an empty row beside a non-empty one",
        "binary (only 0 and 1)",
        "negative entries",
        "binary, with negative entries",
        "only zeros and negative values",
        "the dtype's minimum",
        "a binary row with a negative entry beside an indexed row",
        "a binary row beside an indexed row",
        "ids 127 and 128 in a row",
        "ids 255 and 256 in a row",
        "gapped (an id skipped)",
        "first id 2",
        "three or more ids in a row",
        "more than 127 ids in a row",
        "zero inside one id's run",
        "leading zero",
        "trailing zero",
        "a row of only negative values",
    ]
    assert not missing(kinds, claimed), f"never drawn: {missing(kinds, claimed)}; drawn: {dict(kinds)}"
    # "negative entries in about one case in two" of the integer masks: often, not always
    integer = EXAMPLES * 2 - kinds["dtype=torch.bool"]
    assert integer / 5 <= kinds["negative entries"] <= integer * 4 / 5, dict(kinds)


def test_id_masks_rarely_reach_the_int16_edge():
    """ "in one such mask in eight (then B = 1), INT16_EDGE_IDS": an id past the int16 largest
    value, 32767, in a mask of one row."""
    can_draw(cs.id_masks(), lambda mask: mask.shape[0] == 1 and mask.dtype != torch.bool and int(mask.max()) > 32767)
