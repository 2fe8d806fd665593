"""The ``triton`` backend (issue 33) passes a sample of the suite under Triton's interpreter on
CPU, and refuses to load on CPU without it. Skipped, with the fix, where triton is not installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from test_suite_run import outcome

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None,
    reason="triton is not installed: pip install -e '.[triton]' to run the triton backend's CI tier",
)


def test_triton_sample_passes_under_the_interpreter(triton_run):
    assert triton_run.returncode == 0, triton_run.output[-5000:]
    outcomes = [outcome(t) for t in triton_run.testcases]
    assert outcomes.count("failed") == 0
    assert outcomes.count("passed") >= 10, f"only {outcomes.count('passed')} tests passed"
    assert "triton interpreter (TRITON_INTERPRET): on" in triton_run.output


def test_triton_refuses_cpu_without_the_interpreter():
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    done = subprocess.run(
        [sys.executable, "-c", "import batchspec.backends.triton"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "TRITON_INTERPRET=1" in done.stderr


STAGING = """
import torch
from batchspec.backends.triton import placement
cpu = torch.device("cpu")
assert placement.kernel_device(cpu) == cpu, "under the interpreter the kernels run on CPU tensors"
placement.INTERPRETER = False
torch.cuda.current_device = lambda: 1
assert placement.kernel_device(cpu) == torch.device("cuda", 1), placement.kernel_device(cpu)
assert placement.kernel_device(torch.device("cuda", 0)) == torch.device("cuda", 0)
"""


def test_triton_stages_cpu_tensors_on_the_gpu_without_the_interpreter():
    """Compiled Triton kernels refuse CPU tensors, but a batch of lists gets CPU outputs
    [tb-device]: on a CUDA machine without the interpreter the backend runs its kernels on the
    current CUDA device (and copies the outputs back); under the interpreter, on the CPU."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", STAGING], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
