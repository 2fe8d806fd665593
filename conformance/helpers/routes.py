"""Every output route of ``convert_text_batch`` (both formats, both mask types with and without
metadata, xdoc off and on, packed rows and the unpacked route) over given rows, as pytest
parameters (``convert_configs``, each marked with the capabilities it requires), and
``call_convert``, the backend's ``convert_text_batch`` on one of them. Used by
conformance/test_batch_fields.py's [tb-device] and [tb-no-aliasing] checks, over the stored
worked examples A and E."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product
from typing import Any

import pytest

from batchspec.conformance.helpers.literals import IGNORE_INDEX
from batchspec.conformance.helpers.sample_batches import Contract, Row, describe_rows, payload_form, sample_batch

__all__ = ["call_convert", "convert_configs"]


def convert_configs(packed_rows: Sequence[Row], unpacked_rows: Sequence[Row]) -> list:
    """Every output route of convert_text_batch: both formats, both mask types with and without
    metadata, xdoc off and on, ``packed_rows`` and the unpacked route over ``unpacked_rows``
    (``pad_to_length=6``, ``pad_token_id=0``), as pytest parameters marked with the
    capabilities each requires."""
    params = []
    for route, output_format, xdoc in product(("packed", "unpacked"), ("batched", "thd"), (False, True)):
        contracts = (
            [Contract(mask, metadata) for mask, metadata in product(("block_causal", "document_ids"), (False, True))]
            if output_format == "batched"
            else [Contract("document_ids", True)]
        )
        for contract in contracts:
            needs = ["convert_text_batch"]
            if output_format == "thd":
                needs.append("thd")
            if xdoc:
                needs.append("xdoc")
            if route == "unpacked":
                needs.append("unpacked")
            if contract.return_packed_sequence_metadata and output_format == "batched":
                needs.append("packed_metadata")
            metadata = "meta" if contract.return_packed_sequence_metadata else "nometa"
            name = f"{route}-{output_format}-{contract.packed_mask_type}-{metadata}-{'xdoc' if xdoc else 'noxdoc'}"
            options = dict(
                contract=contract,
                xdoc=xdoc,
                output_format=output_format,
                rows=list(unpacked_rows if route == "unpacked" else packed_rows),
                pad_to_length=6 if route == "unpacked" else None,
                pad_token_id=0 if route == "unpacked" else None,
            )
            params.append(pytest.param(options, id=name, marks=pytest.mark.requires(*needs)))
    return params


def call_convert(backend, options: Mapping[str, Any], form: str = "lists", batch=None):
    """``convert_text_batch`` on ``options`` (one of ``CONVERT_CONFIGS``) with the payloads as ``form``
    (``payload_form``), or on ``batch``: ``(output, batch, call)``, ``call`` describing it."""
    batch = payload_form(sample_batch(options["rows"]), form) if batch is None else batch
    out = backend.convert_text_batch(
        batch,
        options["contract"],
        IGNORE_INDEX,
        False,
        options["xdoc"],
        options["output_format"],
        options["pad_to_length"],
        options["pad_token_id"],
    )
    call = (
        f"convert_text_batch({describe_rows(options['rows'])} as {form}, {options['contract']!r}, "
        f"xdoc={options['xdoc']}, output_format={options['output_format']!r}, "
        f"pad_to_length={options['pad_to_length']})"
    )
    return out, batch, call
