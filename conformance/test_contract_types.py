"""The contract types and their validation (SPEC.md, "Contract types")."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from conformance._asserts import assert_raises
from conformance._zephon import Contract


@pytest.mark.requires("contract_types")
@pytest.mark.clause("types-default-contract", "types-mask-type")
def test_default_contract_values(backend):
    """DEFAULT_PACKED_SEQUENCE_CONTRACT is block-causal with no metadata, and immutable."""
    default = backend.DEFAULT_PACKED_SEQUENCE_CONTRACT
    seen = {
        "packed_mask_type": default.packed_mask_type,
        "return_packed_sequence_metadata": default.return_packed_sequence_metadata,
        "return_document_ids": default.return_document_ids,
        "max_sequence_length": default.max_sequence_length,
    }
    want = {
        "packed_mask_type": "block_causal",
        "return_packed_sequence_metadata": False,
        "return_document_ids": False,
        "max_sequence_length": None,
    }
    assert seen == want, f"DEFAULT_PACKED_SEQUENCE_CONTRACT={seen}, but should be {want} [types-default-contract]"
    # Immutable: assigning an attribute fails (any exception: a frozen dataclass raises
    # FrozenInstanceError, a NamedTuple AttributeError, a custom __setattr__ what it likes) and
    # changes nothing.
    try:
        default.packed_mask_type = "document_ids"
    except Exception:  # noqa: BLE001 - the clause fixes no exception type
        pass
    else:
        raise AssertionError(
            "assigning DEFAULT_PACKED_SEQUENCE_CONTRACT.packed_mask_type succeeded, but the "
            "default contract is immutable [types-default-contract]"
        )
    assert default.packed_mask_type == "block_causal", "the default contract was mutated [types-default-contract]"
    assert backend.require_supported_packing_contract(default) is None


@pytest.mark.requires("contract_types")
@pytest.mark.clause("types-contract", "types-mask-type", "contract-validation", "contract-metadata-flag")
@pytest.mark.parametrize(
    "contract",
    [
        Contract("block_causal", False),
        Contract("document_ids", True),
        Contract("document_ids", False, True, 4096),
        SimpleNamespace(packed_mask_type="block_causal", return_packed_sequence_metadata=True),
        SimpleNamespace(packed_mask_type="document_ids", requires_packed_sequence_metadata=False),
    ],
    ids=["block-causal", "document-ids-metadata", "all-fields", "structural", "legacy-flag-name"],
)
def test_valid_contracts_are_accepted(backend, contract):
    """Any object with the contract's attributes is accepted, unchanged, returning None."""
    before = dict(vars(contract)) if isinstance(contract, SimpleNamespace) else dataclasses.asdict(contract)
    assert backend.require_supported_packing_contract(contract) is None
    after = dict(vars(contract)) if isinstance(contract, SimpleNamespace) else dataclasses.asdict(contract)
    assert after == before, f"the contract changed from {before} to {after} [contract-validation]"


# (case id, contract, error type, facts the message names, the [contract-validation] item)
BAD_CONTRACTS = [
    ("unknown-mask-type", Contract("flash_varlen"), ValueError, ("packed_mask_type",), 5),
    ("no-mask-type", SimpleNamespace(return_packed_sequence_metadata=False), TypeError, ("packed_mask_type",), 1),
    (
        "no-metadata-flag",
        SimpleNamespace(packed_mask_type="block_causal"),
        TypeError,
        ("return_packed_sequence_metadata",),
        2,
    ),
    ("metadata-flag-not-bool", Contract("block_causal", 1), TypeError, ("return_packed_sequence_metadata",), 2),
    (
        "legacy-flag-not-bool",
        SimpleNamespace(packed_mask_type="block_causal", requires_packed_sequence_metadata="no"),
        TypeError,
        ("requires_packed_sequence_metadata",),
        2,
    ),
    ("document-ids-flag-not-bool", Contract("block_causal", False, "yes"), TypeError, ("return_document_ids",), 3),
    ("max-length-not-int", Contract("block_causal", False, False, 2.5), TypeError, ("max_sequence_length",), 4),
    ("max-length-bool", Contract("block_causal", False, False, True), TypeError, ("max_sequence_length",), 4),
    ("max-length-zero", Contract("block_causal", False, False, 0), ValueError, ("max_sequence_length",), 6),
]


@pytest.mark.requires("contract_types")
@pytest.mark.clause("contract-validation", "contract-metadata-flag", "types-mask-type")
@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c[0], marks=pytest.mark.clause(f"contract-validation.{c[4]}")) for c in BAD_CONTRACTS]
)
def test_bad_contracts_are_rejected(backend, case):
    """Each malformed contract raises the SPEC's error type, naming the attribute; each case
    cites the enumerated item of [contract-validation] it checks."""
    _, contract, error, words, item = case
    assert_raises(
        error, words, backend.require_supported_packing_contract, contract, clause=f"contract-validation.{item}"
    )


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("contract-once", "types-contract")
@pytest.mark.parametrize("xdoc", [False, True])
def test_minimal_structural_contract_works_per_batch(backend, xdoc):
    """A contract with only the two required attributes is enough for convert_text_batch."""
    from conformance._examples import EXAMPLE_ROWS, convert

    minimal = SimpleNamespace(packed_mask_type="document_ids", return_packed_sequence_metadata=True)
    out = convert(backend, EXAMPLE_ROWS, minimal, xdoc=xdoc)
    assert "cu_seqlens" in out and out["attention_mask"].dtype == torch.int64, (
        f"keys {sorted(out)} [contract-once: a minimal contract must be honoured]"
    )
    assert vars(minimal) == {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True}


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("contract-no-revalidation")
@pytest.mark.parametrize("xdoc", [False, True])
def test_attributes_a_batch_does_not_use_are_not_revalidated_per_batch(backend, xdoc):
    """A contract whose unused optional attribute is invalid (``return_document_ids="yes"``,
    which loader construction would reject) still converts, exactly like the valid contract:
    per batch only the attributes in use are read."""
    from conformance._asserts import assert_batch_equal
    from conformance._examples import EXAMPLE_ROWS, convert

    valid = SimpleNamespace(packed_mask_type="document_ids", return_packed_sequence_metadata=True)
    unused_invalid = SimpleNamespace(
        packed_mask_type="document_ids", return_packed_sequence_metadata=True, return_document_ids="yes"
    )
    call = f"convert_text_batch(contract with return_document_ids='yes', xdoc={xdoc})"
    try:
        out = convert(backend, EXAMPLE_ROWS, unused_invalid, xdoc=xdoc)
    except (TypeError, ValueError) as error:
        raise AssertionError(
            f"raised {type(error).__name__}({error}), but a per-batch call should not re-validate the contract "
            f"[contract-no-revalidation: {call}]"
        ) from error
    assert_batch_equal(
        out, convert(backend, EXAMPLE_ROWS, valid, xdoc=xdoc), clause="contract-no-revalidation", call=call
    )
