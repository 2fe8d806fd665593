"""Serialisation: a case's values as a JSON skeleton plus safetensors, and back.

Every tensor of a value moves into a safetensors mapping under its path and leaves
``{"$tensor": "<path>"}`` in the skeleton; the rest is JSON (dict order kept, tuples as
lists). Parsing uses ``safetensors.torch.load`` and ``json.loads`` only, never pickle."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from batchspec.conformance.golden.errors import GoldenError
from batchspec.conformance.run.package_data import EXPECTED, INPUTS, RECORD, REGENERATE, TENSOR

__all__ = ["case_files", "index_bytes", "join", "json_bytes", "parse_json", "parse_tensors", "plain", "split"]


def plain(value: Any) -> Any:
    """An output as JSON-able data plus tensors (dict order kept, tuples as lists)."""
    if isinstance(value, torch.Tensor) or value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    raise GoldenError(f"cannot store an output value of type {type(value).__name__}")


def split(value: Any, prefix: str, tensors: dict[str, torch.Tensor]) -> Any:
    """A JSON skeleton of ``value``; tensors move into ``tensors`` under their path."""
    if isinstance(value, torch.Tensor):
        tensors[prefix] = value.detach().contiguous().clone()
        return {TENSOR: prefix}
    if isinstance(value, Mapping):
        return {str(k): split(v, f"{prefix}.{k}" if prefix else str(k), tensors) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [split(v, f"{prefix}.{i}" if prefix else str(i), tensors) for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise GoldenError(f"{prefix}: cannot store a value of type {type(value).__name__}")


def join(skeleton: Any, tensors: Mapping[str, torch.Tensor], where: str) -> Any:
    """The value ``split`` took apart: each ``{"$tensor": key}`` replaced by its tensor."""
    if isinstance(skeleton, Mapping):
        if set(skeleton) == {TENSOR}:
            key = skeleton[TENSOR]
            if key not in tensors:
                raise GoldenError(f"{where}: the record names tensor {key!r}, which the safetensors file lacks")
            return tensors[key]
        return {k: join(v, tensors, where) for k, v in skeleton.items()}
    if isinstance(skeleton, list):
        return [join(v, tensors, where) for v in skeleton]
    return skeleton


def json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=False, ensure_ascii=True) + "\n").encode()


def case_files(
    name: str, record: Mapping[str, Any], inputs: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor]
) -> dict[str, bytes]:
    """The three files of case ``name``, by path relative to golden/."""
    base = f"data/{name}"
    return {
        f"{base}/{RECORD}": json_bytes(record),
        f"{base}/{INPUTS}": save_safetensors(dict(inputs)),
        f"{base}/{EXPECTED}": save_safetensors(dict(expected)),
    }


def index_bytes(files: Mapping[str, bytes], version: str) -> bytes:
    """``index.json``: every file's sha256, the SPEC version and the command that regenerates them."""
    index = {
        "spec_version": version,
        "regenerate": REGENERATE,
        "files": {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())},
    }
    return (json.dumps(index, indent=1, sort_keys=True) + "\n").encode()


def parse_tensors(data: bytes, relpath: str) -> dict[str, torch.Tensor]:
    try:
        return load_safetensors(data)
    except (SafetensorError, ValueError, RuntimeError) as error:
        raise GoldenError(f"golden/{relpath}: not a valid safetensors file ({error})") from None


def parse_json(data: bytes, relpath: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as error:
        raise GoldenError(f"golden/{relpath}: not valid JSON ({error})") from None
