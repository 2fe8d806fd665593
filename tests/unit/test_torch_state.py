"""conformance/run/torch_state.py: torch's process-wide settings are read, set back and reported
around calls into the backend and around a test ([global-state])."""

from __future__ import annotations

import pytest
import torch

from batchspec.conformance.run.torch_state import (
    SETTINGS,
    GlobalStateWarning,
    guard_call,
    guarding_test,
    snapshot,
    take_changes,
    unusual_settings,
)


def _change_everything() -> None:
    torch.set_default_dtype(torch.float16)
    torch.set_default_device("meta")
    torch.set_grad_enabled(not torch.is_grad_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(torch.get_num_threads() + 1)
    torch.set_anomaly_enabled(True, True)
    torch.set_float32_matmul_precision("medium")
    torch.backends.cudnn.deterministic = not torch.backends.cudnn.deterministic
    torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark


def test_a_call_that_changes_every_setting_has_each_set_back_and_named():
    before = snapshot()
    take_changes()
    assert guard_call(lambda: _change_everything() or 7, "convert_text_batch") == 7
    assert snapshot() == before
    changes = take_changes()
    assert [c.split(":")[0] for c in changes] == [setting.name for setting in SETTINGS]
    assert all(c.endswith("(in convert_text_batch)") for c in changes)
    assert "default dtype: torch.float32 -> torch.float16 (in convert_text_batch)" in changes


def test_a_call_that_raises_has_the_settings_set_back_too():
    before = snapshot()
    take_changes()

    def raising():
        torch.set_default_dtype(torch.float64)
        raise IndexError("out of range")

    with pytest.raises(IndexError):
        guard_call(raising, "get_unpad_data")
    assert snapshot() == before and take_changes() == [
        "default dtype: torch.float32 -> torch.float64 (in get_unpad_data)"
    ]


def test_a_default_device_set_to_the_cpu_is_set_back_but_no_change():
    take_changes()
    guard_call(lambda: torch.set_default_device("cpu"), "adapt_model_inputs")
    assert take_changes() == [] and getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None) is None


def test_the_guard_of_a_test_sees_calls_and_what_was_left_changed_and_warns():
    before = snapshot()
    found: list[str] = []
    with pytest.warns(GlobalStateWarning, match=r"number of threads: \d+ -> \d+ \(during the test\)"):
        with guarding_test(found):
            guard_call(lambda: torch.set_grad_enabled(False), "convert_text_batch")
            torch.set_num_threads(torch.get_num_threads() + 1)  # a method of a class: not wrapped
    assert snapshot() == before
    assert found[0] == "grad mode: True -> False (in convert_text_batch)" and "(during the test)" in found[1]


def test_a_test_that_fails_or_is_skipped_has_the_settings_set_back_and_its_exception_kept():
    before = snapshot()
    found: list[str] = []
    with pytest.warns(GlobalStateWarning), pytest.raises(pytest.skip.Exception):
        with guarding_test(found):
            torch.set_default_dtype(torch.float64)
            pytest.skip("not supported")
    assert snapshot() == before and found == ["default dtype: torch.float32 -> torch.float64 (during the test)"]
    quiet: list[str] = []
    with pytest.raises(KeyError):
        with guarding_test(quiet):
            raise KeyError("k")
    assert quiet == []


def test_unusual_settings_differ_from_the_defaults_and_are_set_back():
    before = snapshot()
    with unusual_settings() as inside:
        assert torch.get_default_dtype() == torch.float64 and not torch.is_grad_enabled()
        assert len(before.changes(inside)) == 4
    assert snapshot() == before
