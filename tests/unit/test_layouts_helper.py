"""The layouts helper (``conformance/helpers/layouts.py``) builds what its docstring promises: equal
values in every layout that fits, really non-contiguous (or at a storage offset), and it draws
every layout kind; a layout that does not fit, or a copy that would not be one, is a suite error."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from batchspec.conformance.helpers.asserts import SuiteError
from batchspec.conformance.helpers.layouts import LAYOUTS, describe_layout, laid_out, layouts_for, relayout

FIXED = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)

VALUES = {
    "mask [B, S]": torch.tensor([[1, 2, 0], [3, 3, 0]]),
    "equal rows": torch.tensor([[1, 1, 0], [1, 1, 0]]),
    "bool": torch.tensor([[True, False], [False, True]]),
    "uint8 column": torch.tensor([[1], [2]], dtype=torch.uint8),
    "mRoPE [A, B, S]": torch.arange(12).reshape(3, 2, 2),
    "block-causal [B, 1, S, S]": torch.ones(2, 1, 3, 3, dtype=torch.bool).tril(),
    "pixels [N, C, H, W]": torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 4),
    "constant 1-D": torch.full((4,), 7),
    "0-D": torch.tensor(0.5),
    "empty": torch.zeros(0, dtype=torch.int64),
    "numpy": np.arange(5, dtype=np.int32),
    "numpy constant": np.full(3, 9, dtype=np.uint64),
}


def _kind(value) -> str:
    """The layout a copy is in, read from its strides."""
    strides = tuple(value.stride()) if isinstance(value, torch.Tensor) else tuple(value.strides)
    if 0 in strides:
        return "expanded"
    if isinstance(value, torch.Tensor) and value.ndim == 4 and value.is_contiguous(memory_format=torch.channels_last):
        if not value.is_contiguous():
            return "channels_last"
    contiguous = value.is_contiguous() if isinstance(value, torch.Tensor) else value.flags.c_contiguous
    return "offset" if contiguous else "step or transposed"


@pytest.mark.parametrize("name", list(VALUES))
def test_every_fitting_layout_keeps_the_values_and_leaves_the_contiguous_layout(name):
    value = VALUES[name]
    for layout in layouts_for(value):
        for pad in (0, 3) if layout != "offset" else (1, 3):
            out = relayout(value, layout, pad=pad, fill=1)
            assert type(out) is type(value) and out.dtype == value.dtype and tuple(out.shape) == tuple(value.shape)
            assert torch.equal(out, value) if isinstance(value, torch.Tensor) else np.array_equal(out, value), layout
            contiguous = out.is_contiguous() if isinstance(out, torch.Tensor) else out.flags.c_contiguous
            assert not contiguous or "storage_offset=0" not in describe_layout(out), (layout, describe_layout(out))
            assert f"storage_offset={pad}" in describe_layout(out), describe_layout(out)


def test_the_layouts_that_fit():
    assert layouts_for(VALUES["mask [B, S]"]) == ("step", "transposed", "offset")
    assert layouts_for(VALUES["equal rows"]) == ("step", "transposed", "expanded", "offset")
    # one channel: channels-last is the contiguous layout, so it is not offered
    assert "channels_last" not in layouts_for(VALUES["block-causal [B, 1, S, S]"])
    assert "channels_last" in layouts_for(VALUES["pixels [N, C, H, W]"])
    assert layouts_for(VALUES["0-D"]) == layouts_for(VALUES["empty"]) == ("offset",)
    assert layouts_for(VALUES["numpy constant"]) == ("step", "expanded", "offset")


def test_a_layout_that_does_not_fit_is_a_suite_error():
    with pytest.raises(SuiteError, match="does not fit"):
        relayout(VALUES["mask [B, S]"], "expanded")
    with pytest.raises(SuiteError, match="does not fit"):
        relayout(VALUES["numpy"], "transposed")
    with pytest.raises(SuiteError, match="pad >= 1"):
        relayout(VALUES["mask [B, S]"], "offset", pad=0)


def test_a_copy_at_offset_0_in_the_contiguous_layout_is_a_suite_error(monkeypatch):
    from batchspec.conformance.helpers import layouts

    monkeypatch.setattr(layouts, "_strides", lambda shape, layout, dim, step: layouts._contiguous_strides(shape))
    with pytest.raises(SuiteError, match="not the promised layout"):
        relayout(VALUES["mask [B, S]"], "transposed", pad=0)


def test_laid_out_draws_every_layout_kind():
    seen: Counter = Counter()

    @FIXED
    @given(st.data())
    def draw(data):
        value = data.draw(st.sampled_from(list(VALUES.values())))
        out = data.draw(laid_out(value))
        seen[_kind(out)] += 1

    draw()
    assert set(seen) == {"expanded", "channels_last", "offset", "step or transposed"}, seen
    assert set(LAYOUTS) == {"offset", "step", "transposed", "expanded", "channels_last"}


def test_the_description_names_strides_and_storage_offset():
    out = relayout(VALUES["mask [B, S]"], "transposed", pad=2, fill=0)
    assert describe_layout(out) == (
        "Tensor[shape=(2, 3), dtype=torch.int64, strides=(1, 2), storage_offset=2, non-contiguous]"
    )
    array = relayout(VALUES["numpy"], "step", step=3, pad=1, fill=0)
    assert describe_layout(array) == "ndarray[shape=(5,), dtype=int32, strides=(3,), storage_offset=1, non-contiguous]"
