"""Verified loading of ``golden/``: a file is read only if ``index.json`` lists it, and parsed
only after its sha256 matches the index; any file under ``golden/data`` that the index does
not list (and any indexed file that is missing) is rejected."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchspec.conformance.golden.errors import GoldenError
from batchspec.conformance.golden.file_format import join, parse_json, parse_tensors
from batchspec.conformance.run.package_data import EXPECTED, INDEX, INPUTS, RECORD, REGENERATE, ROOT

__all__ = ["StoredCase", "check_tree", "load_all", "load_case", "load_index", "read_verified"]


@dataclass(frozen=True)
class StoredCase:
    """A case as loaded from golden/data through the verified path."""

    name: str
    record: dict
    inputs: Any
    expected: Any

    @property
    def function(self) -> str:
        return self.record["function"]

    @property
    def clauses(self) -> tuple[str, ...]:
        return tuple(self.record["clauses"])

    @property
    def capabilities(self) -> tuple[str, ...]:
        return tuple(self.record["capabilities"])

    @property
    def source(self) -> str | None:
        """Where the case comes from (e.g. a field report, ``"F07"``), if recorded."""
        return self.record.get("source")


def load_index(root: Path = ROOT) -> dict:
    path = root / INDEX
    try:
        index = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise GoldenError(f"{path}: no golden index; run {REGENERATE}") from None
    except ValueError as error:
        raise GoldenError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(index, dict) or not isinstance(index.get("files"), dict):
        raise GoldenError(f"{path}: not a golden index (no 'files' mapping)")
    return index


def check_tree(root: Path, index: Mapping) -> None:
    """Every file under ``root/data`` is indexed, and every indexed file exists."""
    on_disk = {p.relative_to(root).as_posix() for p in (root / "data").rglob("*") if p.is_file() or p.is_symlink()}
    extra = sorted(on_disk - set(index["files"]))
    missing = sorted(set(index["files"]) - on_disk)
    problems = [f"golden/{p}: file is not in golden/index.json (unindexed files are rejected)" for p in extra]
    problems += [f"golden/{p}: indexed but missing" for p in missing]
    if problems:
        raise GoldenError("\n".join(problems))


def read_verified(root: Path, relpath: str, index: Mapping) -> bytes:
    """The bytes of an indexed file whose sha256 matches the index; raised before parsing."""
    if relpath not in index["files"]:
        raise GoldenError(f"golden/{relpath}: file is not in golden/index.json")
    path = root / relpath
    if path.is_symlink() or not path.is_file():
        raise GoldenError(f"golden/{relpath}: not a regular file")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != index["files"][relpath]:
        raise GoldenError(
            f"golden/{relpath}: sha256 {digest} does not match the index ({index['files'][relpath]}): the file was "
            f"modified, truncated or is stale; regenerate with {REGENERATE}"
        )
    return data


def load_case(name: str, root: Path = ROOT, index: Mapping | None = None) -> StoredCase:
    index = load_index(root) if index is None else index
    base = f"data/{name}"
    record = parse_json(read_verified(root, f"{base}/{RECORD}", index), f"{base}/{RECORD}")
    inputs = parse_tensors(read_verified(root, f"{base}/{INPUTS}", index), f"{base}/{INPUTS}")
    expected = parse_tensors(read_verified(root, f"{base}/{EXPECTED}", index), f"{base}/{EXPECTED}")
    return StoredCase(
        name=name,
        record=record,
        inputs=join(record["inputs"], inputs, f"golden/{base}/{INPUTS}"),
        expected=join(record["expected"], expected, f"golden/{base}/{EXPECTED}"),
    )


def load_all(root: Path = ROOT) -> list[StoredCase]:
    """Every case of the index, loaded through the verified path; any unindexed, missing,
    modified or unparsable file raises ``GoldenError`` naming it."""
    index = load_index(root)
    check_tree(root, index)
    names = sorted({p.split("/")[1] for p in index["files"] if p.startswith("data/")})
    return [load_case(name, root, index) for name in names]
