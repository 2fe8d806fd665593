"""``--device`` on a run of the suite (the runs of ``tests/unit/test_device.py``): a device this
machine does not have, or an unknown one, is a usage error; the header and the report record the
device.
"""

from __future__ import annotations

import pytest
import torch
from _suite import run_conformance


def _usage_error(tmp_path, value):
    run = run_conformance(tmp_path, "conformance/test_goldens.py", "--backend=reference", f"--device={value}")
    assert run.returncode == 4 and not run.testcases, run.output[-2000:]
    return run.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_device_cuda_on_a_cpu_machine_is_a_usage_error(tmp_path):
    output = _usage_error(tmp_path, "cuda")
    assert "--device='cuda'" in output and "CUDA is not available on this machine" in output, output[-2000:]


@pytest.mark.parametrize("value", ["tpu", "cuda:x"])
def test_an_unknown_device_is_a_usage_error(tmp_path, value):
    output = _usage_error(tmp_path, value)
    assert f"--device={value!r}" in output and "cpu, cuda or cuda:N" in output, output[-2000:]


def test_the_header_and_the_report_record_the_device(tmp_path):
    run = run_conformance(tmp_path, "conformance/test_goldens.py", "--backend=reference", "-k", "unpad")
    assert run.returncode == 0, run.output[-3000:]
    assert "  device: cpu" in run.output and run.report["backend"]["device"] == "cpu"
