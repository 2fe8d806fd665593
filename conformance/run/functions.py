"""One record per contract function: everything the suite keys by a function's name.

``FUNCTIONS`` holds one ``ContractFunction`` per row of SPEC.md's [api-signatures] table
(``Datum.to_features`` for a method), in the table's order. SPEC.md stays the home of what it
states, and a record reads it through ``conformance/run/spec.py`` rather than restating it: the
profile and signature (``spec_signatures``) and the clause that lists the function's faults
("Raising on a valid input", ``spec_raising_clauses``). A record states the suite's own facts:

* ``device``: how ``--device`` places the function (``conformance/run/device.py``): ``BY_TENSORS``
  (its tensor arguments and the tensor values of its mapping arguments are moved, and its
  outputs follow their device), ``BY_TOKEN_FIELDS`` (its ``SampleBatch``'s tensor payloads are
  moved, its outputs follow the records' token fields, [ctb-token-field]) or ``None`` (called
  as it is);
* ``required_by`` / ``option_profiles``: the further capabilities whose backends must export
  it (``conformance/run/backends.py``, ``CAPABILITIES``): always, or only with some options (such
  a capability is never inferred from the exported names alone);
* ``signature_clauses``: the clauses besides [api-signatures] that single out a rule of its
  signature (``collate_datums``' keyword-only options, [collate-keyword-only]), which the
  signature check (``conformance/test_contract_signatures.py``) is blamed on too;
* ``output_clauses`` / ``key_set_clauses``: the clauses a differing output key breaks, and the
  clauses that define the output's key set (``conformance/golden/key_blame.py``);
* ``no_mutation``: the clauses a modified input breaks, when a golden case reports one
  (SPEC.md's no-mutation clauses; empty where SPEC names none for the function);
* ``goldens``: how golden cases call it (derived in ``conformance/golden/adapters.py``), one
  ``GoldenCall`` per target a case may name (``ZephonDataLoader.state`` is a second target of
  ``ZephonDataLoader``).

``CONSTANTS`` holds the contract names that are not functions (``DEFAULT_PACKED_SEQUENCE_CONTRACT``).
The table of the contract's names in docs/backend-guide.md (section 1) is generated from both:
``python -m batchspec.conformance.run.functions --write`` (``--check`` says whether it is current).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchspec.conformance.golden import calls
from batchspec.conformance.golden.loader_script import run_loader
from batchspec.conformance.run.spec import spec_raising_clauses, spec_signatures

__all__ = [
    "CONSTANTS",
    "FUNCTIONS",
    "GUIDE",
    "BY_TENSORS",
    "BY_TOKEN_FIELDS",
    "ContractConstant",
    "ContractFunction",
    "GoldenCall",
    "OptionCapability",
    "exported_names",
    "main",
    "option_only_profiles",
    "placed_functions",
    "render_table",
]

# ``ContractFunction.device``: what --device moves, and where the outputs belong ([tb-device])
BY_TENSORS = "tensors"
BY_TOKEN_FIELDS = "token fields"

Run = Callable[[Any, dict, dict], tuple[Any, list[str]]]


@functools.cache
def _signatures() -> dict[str, tuple[str, str]]:
    return spec_signatures()


@functools.cache
def _raising() -> dict[str, str]:
    return spec_raising_clauses()


@dataclass(frozen=True)
class OptionCapability:
    """A capability a golden call needs only with certain options."""

    capability: str
    needed: Callable[[Mapping[str, Any]], bool]


THD = OptionCapability("thd", lambda o: o.get("output_format") == "thd")
XDOC = OptionCapability("xdoc", lambda o: bool(o.get("xdoc")))
UNPACKED = OptionCapability("unpacked", lambda o: o.get("pad_to_length") is not None)


@dataclass(frozen=True)
class GoldenCall:
    """How golden cases naming ``target`` (``Case.function``) call the backend."""

    target: str
    run: Run  # conformance/golden/calls.py
    needs: tuple[str, ...] = ()  # capabilities needed beyond the function's profile, always
    option_capabilities: tuple[OptionCapability, ...] = ()  # needed with some options, in this order
    ordered_keys: bool = False  # the output's key order is part of the contract
    frozen_tensors: bool = False  # report input tensors the call modified in place


@dataclass(frozen=True)
class ContractFunction:
    """One contract function (a row of SPEC's [api-signatures] table) and the suite's facts about it."""

    name: str  # as the [api-signatures] table spells it
    device: str | None = None  # BY_TENSORS, BY_TOKEN_FIELDS or None: how --device places it
    required_by: tuple[str, ...] = ()  # further capabilities that need its export
    option_profiles: tuple[str, ...] = ()  # capabilities that cover it with some options only
    signature_clauses: tuple[str, ...] = ()  # clauses besides [api-signatures] on its signature
    output_clauses: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # key ("*": any other) -> clauses
    key_set_clauses: tuple[str, ...] = ()  # the clauses its output's key set is defined by
    no_mutation: tuple[str, ...] = ()  # the clauses a modified input breaks
    goldens: tuple[GoldenCall, ...] = ()

    @property
    def profile(self) -> str:
        """Its profile, from SPEC's [api-signatures] table.

        Raises:
            KeyError: the table has no row ``name``."""
        try:
            return _signatures()[self.name][1]
        except KeyError:
            raise KeyError(f"{self.name!r} is no row of SPEC.md's [api-signatures] table") from None

    @property
    def signature(self) -> str:
        """Its signature text, from SPEC's [api-signatures] table (``(attention_mask)``)."""
        return _signatures()[self.name][0]

    @property
    def export(self) -> str:
        """The name a backend exposes it under (a method's class: ``Datum`` for ``Datum.to_features``)."""
        return self.name.partition(".")[0]

    @property
    def raising_clause(self) -> str | None:
        """The clause SPEC's "Raising on a valid input" pairs it with, or None."""
        return _raising().get(self.name)

    @property
    def capabilities(self) -> tuple[str, ...]:
        """Every capability whose backends must export it: its profile, ``required_by``, ``option_profiles``."""
        return (self.profile, *self.required_by, *self.option_profiles)


@dataclass(frozen=True)
class ContractConstant:
    """A contract name that is not a function (no row of [api-signatures])."""

    name: str
    profile: str
    goldens: tuple[GoldenCall, ...] = ()

    @property
    def export(self) -> str:
        return self.name

    @property
    def capabilities(self) -> tuple[str, ...]:
        return (self.profile,)


_RECORDS = (
    ContractFunction(
        "require_supported_packing_contract",
        no_mutation=("contract-validation",),
        goldens=(GoldenCall("require_supported_packing_contract", calls.run_require_supported_packing_contract),),
    ),
    ContractFunction(
        "get_unpad_data",
        device=BY_TENSORS,
        output_clauses={
            "indices": ("unpad-outputs",),
            # the spans are the route's: [unpad-binary], [unpad-indexed], and any order [unpad-precondition]
            "cu_seqlens": ("unpad-binary", "unpad-indexed", "unpad-precondition"),
            "cu_seqlens.dtype": ("unpad-outputs",),
            "max_seqlen": ("unpad-outputs",),
        },
        goldens=(GoldenCall("get_unpad_data", calls.run_unpad_data, frozen_tensors=True),),
    ),
    ContractFunction(
        "build_packed_sequence_metadata",
        device=BY_TENSORS,
        output_clauses={
            "packed_token_indices": ("meta-indices",),
            "cu_seqlens": ("meta-cu-seqlens", "unpad-precondition"),
            "cu_seqlens.dtype": ("meta-cu-seqlens",),
            "max_seqlen": ("meta-max-seqlen",),
        },
        key_set_clauses=("meta-return",),
        goldens=(GoldenCall("build_packed_sequence_metadata", calls.run_packed_metadata, frozen_tensors=True),),
    ),
    ContractFunction(
        "convert_text_batch",
        device=BY_TOKEN_FIELDS,
        option_profiles=("thd", "unpacked"),
        # its outputs are blamed field by field on SPEC's field table (conformance/helpers/fields.py)
        no_mutation=("ctb-no-mutation",),
        goldens=(
            GoldenCall("convert_text_batch", calls.run_convert_text_batch, option_capabilities=(THD, XDOC, UNPACKED)),
        ),
    ),
    ContractFunction(
        "adapt_model_inputs",
        device=BY_TENSORS,
        output_clauses={"attention_document_ids": ("adapt-attention-ids",), "*": ("adapt-no-mutation",)},
        no_mutation=("adapt-no-mutation",),
        goldens=(GoldenCall("adapt_model_inputs", calls.run_adapt_model_inputs, frozen_tensors=True),),
    ),
    ContractFunction(
        "enable_xdoc_attention",
        device=BY_TENSORS,
        output_clauses={
            "attention_document_ids": ("xdoc-attention-ids",),
            "position_ids": ("xdoc-positions",),
            "*": ("xdoc-untouched",),
        },
        no_mutation=("xdoc-untouched",),
        goldens=(GoldenCall("enable_xdoc_attention", calls.run_enable_xdoc_attention, frozen_tensors=True),),
    ),
    ContractFunction(
        "convert_batch_output",
        device=BY_TENSORS,
        output_clauses={
            "seq_lens": ("thd-lengths",),
            "seq_lens_padded": ("thd-lengths",),
            "qkv_format": ("thd-qkv-format",),
        },
        goldens=(GoldenCall("convert_batch_output", calls.run_convert_batch_output, frozen_tensors=True),),
    ),
    ContractFunction(
        "ZephonDataLoader",
        required_by=("zephon_state", "zephon_state_multirank"),
        signature_clauses=("loader-construct-validates",),
        # a loader scenario's record of what the loader did with its stream (golden/loader_script.py)
        output_clauses={
            "iter_calls_at_construction": ("loader-construct-lazy",),
            "iter_calls": (
                "loader-iter-self",
                "loader-iterator",
                "loader-close",
                "loader-exhaustion",
                "loader-failure-closes",
            ),
            "stream_closed": ("loader-close", "loader-exhaustion", "loader-failure-closes"),
            "batches_converted": ("loader-next", "loader-failure-closes"),
            "converted_in_stream_order": ("loader-next",),
        },
        # [loader-next] says the SampleBatch is not modified; a golden loader case blames a
        # modification on its own clauses (no entry here)
        goldens=(
            GoldenCall("ZephonDataLoader", run_loader, needs=("convert_text_batch",), option_capabilities=(THD,)),
            # single-process checkpoint state over real pipelines (conformance/helpers/state_script.py)
            GoldenCall("ZephonDataLoader.state", calls.run_state, needs=("zephon_state",)),
        ),
    ),
    ContractFunction(
        "Datum",
        output_clauses={"*": ("datum-construct",)},
        no_mutation=("datum-construct",),
        goldens=(GoldenCall("Datum", calls.run_datum),),
    ),
    ContractFunction(
        "Datum.to_features",
        signature_clauses=("collate-keyword-only", "datum-to-features"),
        output_clauses={"*": ("datum-to-features",)},
        key_set_clauses=("datum-to-features",),
        no_mutation=("datum-to-features",),
        goldens=(GoldenCall("Datum.to_features", calls.run_to_features, ordered_keys=True),),
    ),
    ContractFunction(
        "collate_datums",
        signature_clauses=("collate-keyword-only",),
        # [collate-padded] / [collate-packed] define the layout of every key, [collate-weights] the
        # labels too, [collate-side-inputs] every key that is not a token field
        output_clauses={
            "labels": ("collate-padded", "collate-packed", "collate-weights"),
            **dict.fromkeys(
                (
                    "input_ids",
                    "attention_mask",
                    "padding_mask",
                    "position_ids",
                    "seq_lens",
                    "seq_lens_padded",
                    "qkv_format",
                ),
                ("collate-padded", "collate-packed"),
            ),
            "*": ("collate-side-inputs",),
        },
        no_mutation=("collate-no-mutation",),
        goldens=(GoldenCall("collate_datums", calls.run_collate_datums, ordered_keys=True),),
    ),
    ContractFunction(
        "default_collater",
        output_clauses={"padding_mask": ("dcoll-padding-mask",)},
        key_set_clauses=("dcoll-fields", "dcoll-padding-mask"),
        no_mutation=("collaters-no-mutation",),
        goldens=(GoldenCall("default_collater", calls.run_default_collater, ordered_keys=True),),
    ),
    ContractFunction(
        "packed_sequence_thd_collater",
        no_mutation=("collaters-no-mutation",),
        goldens=(
            GoldenCall("packed_sequence_thd_collater", calls.run_packed_sequence_thd_collater, ordered_keys=True),
        ),
    ),
    ContractFunction(
        "pack_features_for_thd",
        output_clauses={"*": ("pack-features",)},
        key_set_clauses=("pack-features",),
        no_mutation=("collaters-no-mutation",),
        goldens=(GoldenCall("pack_features_for_thd", calls.run_pack_features_for_thd, ordered_keys=True),),
    ),
)

# name -> record, in SPEC's [api-signatures] order
FUNCTIONS: dict[str, ContractFunction] = {record.name: record for record in _RECORDS}

CONSTANTS: dict[str, ContractConstant] = {
    c.name: c
    for c in (
        ContractConstant(
            "DEFAULT_PACKED_SEQUENCE_CONTRACT",
            "contract_types",
            goldens=(GoldenCall("DEFAULT_PACKED_SEQUENCE_CONTRACT", calls.run_default_contract),),
        ),
    )
}


def exported_names(capability: str) -> tuple[str, ...]:
    """The names a backend exposes for ``capability`` (a profile name), in SPEC's order:
    the exports of the functions and constants it covers (``ContractFunction.capabilities``)."""
    records: tuple[ContractConstant | ContractFunction, ...] = (*CONSTANTS.values(), *FUNCTIONS.values())
    return tuple(dict.fromkeys(r.export for r in records if capability in r.capabilities))


def option_only_profiles() -> frozenset[str]:
    """The capabilities that cover their functions with some options only (``thd``,
    ``unpacked``): a backend that does not declare its capabilities is never assumed to have them."""
    records: tuple[ContractConstant | ContractFunction, ...] = (*CONSTANTS.values(), *FUNCTIONS.values())
    whole = {c for r in records for c in (r.profile, *getattr(r, "required_by", ()))}
    return frozenset(p for r in FUNCTIONS.values() for p in r.option_profiles) - whole


def placed_functions() -> tuple[str, ...]:
    """The functions ``--device`` runs on the device (``device`` is not None), in SPEC's order."""
    return tuple(name for name, record in FUNCTIONS.items() if record.device is not None)


# ------------------------------------------------------ the backend guide's table ----

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "backend-guide.md"  # in a checkout
BEGIN = "<!-- contract-functions -->"
END = "<!-- /contract-functions -->"


def _clauses(ids: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"[{c}]" for c in ids)


def render_table() -> str:
    """docs/backend-guide.md's table of the contract's names, markers included: one row per record."""
    lines = [
        BEGIN,
        "| name | profile | on `--device` | raising on a valid input breaks | modifying an input breaks |",
        "|---|---|---|---|---|",
    ]
    for record in FUNCTIONS.values():
        profiles = f"`{record.profile}`" + "".join(f", `{c}`" for c in (*record.required_by, *record.option_profiles))
        device = {BY_TENSORS: "its tensors", BY_TOKEN_FIELDS: "its records' tensors", None: ""}[record.device]
        lines.append(
            f"| `{record.name}` | {profiles} | {device} | {_clauses([record.raising_clause] if record.raising_clause else [])}"
            f" | {_clauses(record.no_mutation)} |"
        )
    for constant in CONSTANTS.values():
        lines.append(f"| `{constant.name}` | `{constant.profile}` |  |  |  |")
    lines.append(END)
    return "\n".join(lines)


def table_section(text: str) -> str | None:
    """The table between the markers in ``text`` (markers included), or None."""
    start, end = text.find(BEGIN), text.find(END)
    return text[start : end + len(END)] if 0 <= start < end else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m batchspec.conformance.run.functions", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--write", action="store_true", help="write docs/backend-guide.md's table of the contract's names"
    )
    group.add_argument("--check", action="store_true", help="exit 1 when docs/backend-guide.md's table is not current")
    args = parser.parse_args(argv)
    text = GUIDE.read_text(encoding="utf-8")
    current = table_section(text)
    if current is None:
        print(f"{GUIDE}: no {BEGIN} ... {END} markers", file=sys.stderr)
        return 1
    page = render_table()
    if args.write:
        GUIDE.write_text(text.replace(current, page), encoding="utf-8")
        return 0
    if current != page:
        print(
            "docs/backend-guide.md's table of the contract's names is stale: run python -m batchspec.conformance.run.functions --write"
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
