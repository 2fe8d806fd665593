"""Where the ``triton`` backend's kernels run: ``INTERPRETER`` (Triton's interpreter is on) and
``kernel_device``.

Compiled Triton kernels take device pointers only (a CPU tensor is refused at launch), while
[tb-device] puts the outputs of a batch of lists or numpy arrays on the CPU. So on a CUDA
machine without the interpreter the backend stages such inputs on the current CUDA device,
runs its kernels there and copies the outputs back; under the interpreter the kernels run on
the CPU tensors themselves.
"""

from __future__ import annotations

import os

import torch

__all__ = ["INTERPRETER", "kernel_device"]

# Triton's interpreter (TRITON_INTERPRET=1), read once at import as Triton itself does
INTERPRETER = os.environ.get("TRITON_INTERPRET") == "1"


def kernel_device(device: torch.device) -> torch.device:
    """The device the kernels run on for inputs or outputs on ``device``: ``device`` itself when it
    is not the CPU or the interpreter is on; otherwise (CPU tensors, compiled kernels) the
    current CUDA device, where the caller stages its inputs and from which it copies its
    outputs back to ``device`` [tb-device]."""
    if device.type != "cpu" or INTERPRETER:
        return device
    return torch.device("cuda", torch.cuda.current_device())
