"""The public case API: everything a ``golden/cases/<area>.py`` module imports.

``Case`` (one golden case) and ``text_batch_inputs`` (``convert_text_batch`` inputs) are defined here; the
rest re-exports the suite's helpers under public names: tensor literals (``long``, ``int32``,
``f32``, ``bools``, ``block_mask``), the SPEC's constants (``IGNORE_INDEX`` = -100,
``THD_PAD`` = -1000, ``PAD_TOKEN_IDS_KEY``), packed rows (``Row``, ``packed_row``, ``rows_of``), error
facts (``Shape``, ``Value``) and the real Zephon pipeline over golden/corpus
(``corpus_pipeline``). A case module imports nothing else from the suite.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchspec.conformance.helpers.asserts import Fact, Shape, Value
from batchspec.conformance.helpers.literals import (
    BATCHED_KEYS,
    DOCUMENT_IDS_METADATA_CONTRACT,
    IGNORE_INDEX,
    METADATA_CONTRACT,
    METADATA_KEYS,
    PAD_TOKEN_IDS_KEY,
    THD_KEYS,
    THD_PAD,
    block_mask,
    bools,
    f32,
    int32,
    long,
)
from batchspec.conformance.helpers.sample_batches import Row, packed_row, rows_of

__all__ = [
    "BATCHED_KEYS",
    "CONVERT_CLAUSES",
    "DOCUMENT_IDS_METADATA_CONTRACT",
    "IGNORE_INDEX",
    "METADATA_CONTRACT",
    "METADATA_KEYS",
    "PAD_TOKEN_IDS_KEY",
    "THD_KEYS",
    "THD_PAD",
    "Case",
    "Fact",
    "Row",
    "Shape",
    "Value",
    "block_mask",
    "bools",
    "corpus_pipeline",
    "zephon_catalog",
    "f32",
    "int32",
    "long",
    "packed_row",
    "random_run_ids",
    "text_batch_inputs",
    "rows_of",
]


# The clauses every whole-batch convert_text_batch case checks (shift, labels, masks, ids,
# shapes, dtypes, keys); cases add the clauses of their route.
CONVERT_CLAUSES = (
    "ctb-shift",
    "ctb-positions",
    "ctb-padding-labels",
    "ctb-padding-mask",
    "ctb-document-ids",
    "ctb-attention-ids",
    "tb-shapes",
    "tb-dtypes",
    "tb-keys",
)


@dataclass(frozen=True)
class Case:
    """One golden case. ``expected`` given (hand-written) or ``error`` given: canon;
    both ``None``: generated from the reference.

    ``error`` is ``(type name, facts)``: the call raises that type (or a subclass) whose
    message names every fact (``batchspec.conformance.helpers.asserts.names``: a str as a whole word, an int as
    a whole integer, ``Shape(...)``, ``Value(...)``); the wording is never pinned.
    ``function`` names an adapter of ``batchspec.conformance.golden.adapters`` (a contract function)."""

    name: str
    clauses: tuple[str, ...]
    description: str
    function: str
    inputs: Mapping[str, Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    expected: Mapping[str, Any] | None = None
    error: tuple[str, tuple[Fact, ...]] | None = None
    keys: tuple[str, ...] | None = None  # canon only: the exact output keys, when the case pins them
    # generated scripted cases only: the reference's run records a raised error on purpose (else
    # generation refuses a generated case whose run raises: it would pin an accident)
    expects_error: bool = False
    # where the case comes from, e.g. "F07" (a field report of docs/sources.md#field-reports);
    # recorded in the case's record.json only when given
    source: str | None = None
    generator: str = ""  # "golden/cases/<area>.py::case_<name>", filled in by discovery

    @property
    def kind(self) -> str:
        return "canon" if self.expected is not None or self.error is not None else "generated"


def text_batch_inputs(*rows: Row | Mapping[str, Any], **common: Any) -> dict[str, Any]:
    """``convert_text_batch`` inputs: each ``Row`` (or ``{"row": Row, <record options>}``)
    becomes ``{"tokens": int64, "positions": int64 | None, "padding_length": int | None, ...}``.
    Record options: ``field`` (token field name), ``payload_dtype`` ("int32": torch payloads),
    ``tags`` (replaces ``meta.tags["_packing_metadata"]``), ``drop_positions`` (delete
    ``positions`` after the tag was computed), ``extra`` ({name: tensor} payload fields), ``numpy``
    (names of ``extra`` whose tensor the payload holds as a numpy array of its dtype, e.g. uint64)."""
    out = []
    for item in rows:
        options = dict(item) if isinstance(item, Mapping) else {"row": item}
        row = options.pop("row")
        out.append(
            {
                "tokens": long(list(row.tokens)),
                "positions": None if row.positions is None else long(list(row.positions)),
                "padding_length": row.padding_length,
                **options,
            }
        )
    return {"rows": out, **common}


def corpus_pipeline(scratch_dir: Path, **options: Any):
    """The real Zephon pipeline over golden/corpus (``batchspec.conformance.helpers.pipelines.corpus_pipeline``:
    inline runner, fixed seed, so deterministic); imported on first use."""
    from batchspec.conformance.helpers.pipelines import corpus_pipeline as build

    return build(scratch_dir, **options)


def zephon_catalog(catalog_dir: Path):
    """``batchspec.conformance.helpers.pipelines.zephon_catalog``: point ``ZEPHON_CATALOG_DIR`` at
    ``catalog_dir`` for a ``with`` block, then restore it; imported on first use."""
    from batchspec.conformance.helpers.pipelines import zephon_catalog as catalog

    return catalog(catalog_dir)


def random_run_ids(rng: random.Random, width: int) -> list[int]:
    """A seeded random row of ``width`` row-local ids: runs of 1-3 equal ids counting 1, 2, ...
    over at least one real token, then zeros (padding)."""
    real = rng.randint(1, width)
    row: list[int] = []
    doc = 0
    while len(row) < real:
        doc += 1
        row.extend([doc] * min(rng.randint(1, 3), real - len(row)))
    return row + [0] * (width - real)
