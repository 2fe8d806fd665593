"""Golden cases for SPEC.md's "Contract types": contract types and ``require_supported_packing_contract``,
and the minimal structural contract accepted by ``convert_text_batch``. Hand-written."""

from __future__ import annotations

from batchspec.conformance.golden.api import BATCHED_KEYS, METADATA_KEYS, Case, Row, int32, long, text_batch_inputs

VALID = ("contract-validation", "types-contract", "types-mask-type", "contract-metadata-flag")
INVALID = ("contract-validation", "contract-metadata-flag", "types-mask-type")


def _validate(name, contract, error=None, clauses=VALID, description="", dataclass=False):
    """``require_supported_packing_contract`` on a plain object with exactly the attributes of
    ``contract``, or (``dataclass``) on the suite's frozen dataclass ``Contract`` built from them."""
    return Case(
        name=f"test_contract_{name}",
        clauses=clauses,
        description=description or name.replace("_", " "),
        function="require_supported_packing_contract",
        inputs={},
        options={"contract": contract, **({"dataclass": True} if dataclass else {})},
        expected=None if error else {"returns": None},
        error=error,
    )


def case_default_contract():
    return Case(
        name="test_contract_default",
        clauses=("types-default-contract", "types-mask-type"),
        description="DEFAULT_PACKED_SEQUENCE_CONTRACT: block_causal, no metadata, no ids, no bound, immutable",
        function="DEFAULT_PACKED_SEQUENCE_CONTRACT",
        inputs={},
        expected={
            "packed_mask_type": "block_causal",
            "return_packed_sequence_metadata": False,
            "return_document_ids": False,
            "max_sequence_length": None,
            "immutable": True,
        },
    )


def case_valid_contracts():
    return [
        _validate(
            "minimal_block_causal", {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": False}
        ),
        _validate(
            "minimal_document_ids", {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True}
        ),
        _validate(
            "full",
            {
                "packed_mask_type": "document_ids",
                "return_packed_sequence_metadata": True,
                "return_document_ids": True,
                "max_sequence_length": 4096,
            },
        ),
        _validate(
            "legacy_flag",
            {"packed_mask_type": "block_causal", "requires_packed_sequence_metadata": True},
            clauses=("contract-metadata-flag", "contract-validation"),
            description="the legacy requires_packed_sequence_metadata spelling is read when alone",
        ),
    ]


def case_invalid_contracts():
    bad = [
        ("no_mask_type", {"return_packed_sequence_metadata": False}, "TypeError", ("packed_mask_type",)),
        (
            "unknown_mask_type",
            {"packed_mask_type": "flash_varlen", "return_packed_sequence_metadata": False},
            "ValueError",
            ("packed_mask_type",),
        ),
        ("no_metadata_flag", {"packed_mask_type": "block_causal"}, "TypeError", ("return_packed_sequence_metadata",)),
        (
            "metadata_flag_not_bool",
            {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": 1},
            "TypeError",
            ("return_packed_sequence_metadata",),
        ),
        (
            "document_ids_flag_not_bool",
            {
                "packed_mask_type": "block_causal",
                "return_packed_sequence_metadata": False,
                "return_document_ids": "yes",
            },
            "TypeError",
            ("return_document_ids",),
        ),
        (
            "length_not_int",
            {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": False, "max_sequence_length": 8.0},
            "TypeError",
            ("max_sequence_length",),
        ),
        (
            "length_below_1",
            {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": False, "max_sequence_length": 0},
            "ValueError",
            ("max_sequence_length",),
        ),
    ]
    items = {"no_mask_type": 1, "no_metadata_flag": 2}  # the [contract-validation] item a case checks
    return [
        _validate(
            f"rejects_{n}",
            c,
            error=(k, w),
            clauses=(
                ("contract-validation", "contract-metadata-flag")
                if "flag" in n
                else ("contract-validation", "types-mask-type")
            )
            + ((f"contract-validation.{items[n]}",) if n in items else ()),
        )
        for n, c, k, w in bad
    ]


def case_dataclass_contracts():
    """The same rules on the suite's frozen dataclass ``Contract`` (unnamed fields at their
    defaults), and on plain objects the cases above do not cover."""
    valid = [
        (
            "dataclass_block_causal",
            {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": False},
            True,
        ),
        ("dataclass_document_ids", {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True}, True),
        (
            "dataclass_all_fields",
            {
                "packed_mask_type": "document_ids",
                "return_packed_sequence_metadata": False,
                "return_document_ids": True,
                "max_sequence_length": 4096,
            },
            True,
        ),
        ("structural_metadata", {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": True}, False),
        (
            "legacy_flag_false",
            {"packed_mask_type": "document_ids", "requires_packed_sequence_metadata": False},
            False,
        ),
    ]
    # (name, contract, plain object rather than dataclass, error type, facts, the [contract-validation] item)
    bad = [
        ("dataclass_unknown_mask_type", {"packed_mask_type": "flash_varlen"}, "ValueError", ("packed_mask_type",), 5),
        (
            "dataclass_metadata_flag_not_bool",
            {"return_packed_sequence_metadata": 1},
            "TypeError",
            ("return_packed_sequence_metadata",),
            2,
        ),
        (
            "legacy_flag_not_bool",
            {"packed_mask_type": "block_causal", "requires_packed_sequence_metadata": "no"},
            "TypeError",
            ("requires_packed_sequence_metadata",),
            2,
        ),
        (
            "dataclass_document_ids_flag_not_bool",
            {"return_document_ids": "yes"},
            "TypeError",
            ("return_document_ids",),
            3,
        ),
        ("dataclass_length_not_int", {"max_sequence_length": 2.5}, "TypeError", ("max_sequence_length",), 4),
        ("dataclass_length_bool", {"max_sequence_length": True}, "TypeError", ("max_sequence_length",), 4),
        ("dataclass_length_zero", {"max_sequence_length": 0}, "ValueError", ("max_sequence_length",), 6),
    ]
    return [_validate(n, c, dataclass=d) for n, c, d in valid] + [
        _validate(
            f"rejects_{n}",
            c,
            error=(k, w),
            clauses=INVALID + (f"contract-validation.{item}",),
            dataclass=n.startswith("dataclass_"),
        )
        for n, c, k, w, item in bad
    ]


def case_both_metadata_flag_spellings():
    """[contract-metadata-flag]: with both spellings present, ``return_packed_sequence_metadata``
    is the metadata request and the legacy ``requires_packed_sequence_metadata`` is not read."""
    flag = ("contract-metadata-flag", "contract-validation")
    return [
        _validate(
            "both_flag_spellings_reads_the_new_one",
            {
                "packed_mask_type": "block_causal",
                "return_packed_sequence_metadata": True,
                "requires_packed_sequence_metadata": "no",
            },
            clauses=flag,
            description="both spellings: the request is return_packed_sequence_metadata (a bool), so the legacy "
            "attribute's non-bool value is never read",
        ),
        _validate(
            "rejects_both_flag_spellings_new_one_not_bool",
            {
                "packed_mask_type": "block_causal",
                "return_packed_sequence_metadata": 1,
                "requires_packed_sequence_metadata": True,
            },
            error=("TypeError", ("return_packed_sequence_metadata",)),
            clauses=(*flag, "contract-validation.2"),
            description="both spellings: return_packed_sequence_metadata=1 is the request and not a bool; the legacy "
            "bool does not stand in for it",
        ),
    ] + [
        Case(
            name=f"test_contract_both_flag_spellings_in_convert_text_batch_{'metadata' if new else 'no_metadata'}",
            clauses=("batched-metadata", "contract-once", "tb-keys"),
            description=f"a plain contract with return_packed_sequence_metadata={new} and the legacy "
            f"requires_packed_sequence_metadata={not new}: the new spelling wins [contract-metadata-flag], so the "
            f"metadata bundle is {'present' if new else 'absent'}",
            function="convert_text_batch",
            inputs=text_batch_inputs(Row((4, 5, 6, 0), (0, 1, 0, 0), 1)),
            options={
                "contract": {
                    "minimal": True,
                    "packed_mask_type": "document_ids",
                    "return_packed_sequence_metadata": new,
                    "requires_packed_sequence_metadata": not new,
                }
            },
            expected=(
                {"attention_mask": long([[1, 1, 2]]), "cu_seqlens": int32([[0, 2, 3]]), "max_seqlen": 2}
                if new
                else {"attention_mask": long([[1, 1, 2]])}
            ),
            keys=BATCHED_KEYS + METADATA_KEYS if new else BATCHED_KEYS,
        )
        for new in (True, False)
    ]


def case_minimal_contract_in_convert():
    return Case(
        name="test_contract_minimal_in_convert_text_batch",
        clauses=("contract-once", "types-contract"),
        description="a plain object with only the two required attributes works in convert_text_batch",
        function="convert_text_batch",
        inputs=text_batch_inputs(Row((4, 5, 6, 0), (0, 1, 0, 0), 1)),
        options={
            "contract": {"minimal": True, "packed_mask_type": "document_ids", "return_packed_sequence_metadata": True}
        },
        expected={"attention_mask": long([[1, 1, 2]]), "max_seqlen": 2},
    )


def case_bool_length():
    return _validate(
        "rejects_length_bool",
        {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": False, "max_sequence_length": True},
        error=("TypeError", ("max_sequence_length",)),
        clauses=("contract-validation",),
        description="max_sequence_length=True: a bool is not an int here",
    )


def case_max_sequence_length_at_its_bound():
    """[contract-validation] item 6 at its edge: ``max_sequence_length < 1`` raises, so 1 (exactly
    the bound) is valid, on a plain object and on the dataclass; 0, one past it, is not
    (``test_contract_rejects_length_below_1`` and ``test_contract_rejects_dataclass_length_zero``)."""
    item = ("contract-validation", "contract-validation.6")
    plain = {"packed_mask_type": "block_causal", "return_packed_sequence_metadata": False}
    return [
        _validate(
            "max_sequence_length_1_is_valid",
            {**plain, "max_sequence_length": 1},
            clauses=item,
            description="max_sequence_length 1, exactly at item 6's bound (< 1 raises): valid",
        ),
        _validate(
            "dataclass_max_sequence_length_1_is_valid",
            {"max_sequence_length": 1},
            clauses=item,
            description="the dataclass contract with max_sequence_length 1: valid",
            dataclass=True,
        ),
        _validate(
            "rejects_max_sequence_length_negative",
            {**plain, "max_sequence_length": -1},
            error=("ValueError", ("max_sequence_length",)),
            clauses=item,
            description="max_sequence_length -1: ValueError naming it",
        ),
    ]
