"""The contract types on live objects (SPEC.md, "Contract types").

The default contract's values, and which contracts ``require_supported_packing_contract``
accepts or rejects (on plain objects and on a frozen dataclass, each bad case citing its
[contract-validation] item), are golden cases of ``golden/cases/contract.py``. Here: the
backend's own default contract object refuses assignment, and a per-batch call reads only the
attributes it uses.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from batchspec.conformance.golden.case_values import stored_rows
from batchspec.conformance.helpers.asserts import assert_batch_equal, check, clause_failure
from batchspec.conformance.helpers.literals import convert
from batchspec.conformance.helpers.sample_batches import Contract


@pytest.mark.requires("contract_types")
@pytest.mark.clause("types-default-contract")
def test_default_contract_is_immutable_and_valid(backend):
    """Assigning an attribute of DEFAULT_PACKED_SEQUENCE_CONTRACT fails (any exception: a frozen
    dataclass raises FrozenInstanceError, a NamedTuple AttributeError, a custom __setattr__ what
    it likes) and changes nothing; the default contract is itself valid."""
    default = backend.DEFAULT_PACKED_SEQUENCE_CONTRACT
    before = default.packed_mask_type
    try:
        default.packed_mask_type = "document_ids"
    except Exception:  # the clause fixes no exception type
        pass
    else:
        raise clause_failure(
            "assigning DEFAULT_PACKED_SEQUENCE_CONTRACT.packed_mask_type succeeded, but the "
            "default contract is immutable",
            clause="types-default-contract",
        )
    check(
        default.packed_mask_type == before,
        "the default contract was mutated",
        clause="types-default-contract",
    )
    assert backend.require_supported_packing_contract(default) is None


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("contract-once", "types-contract")
@pytest.mark.parametrize("xdoc", [False, True])
def test_minimal_structural_contract_works_per_batch(backend, xdoc):
    """A contract with only the two required attributes is enough for convert_text_batch: the
    output is the one the same requests give through a full contract (whatever that output is:
    its values are other clauses' matter), and the contract is left as it was."""
    minimal = SimpleNamespace(packed_mask_type="document_ids", return_packed_sequence_metadata=True)
    out = convert(backend, stored_rows(), minimal, xdoc=xdoc)
    full = convert(backend, stored_rows(), Contract("document_ids", True), xdoc=xdoc)
    call = f"convert_text_batch(a contract with only packed_mask_type and the metadata request, xdoc={xdoc})"
    check(
        sorted(out) == sorted(full) and "cu_seqlens" in out and out["attention_mask"].dim() == 2,
        f"keys {sorted(out)}, but should be {sorted(full)}: the document_ids mask and the metadata the full "
        "contract gives",
        clause="contract-once",
        call=call,
    )
    assert_batch_equal(out, full, clause="contract-once", call=f"{call} vs Contract('document_ids', True)")
    assert vars(minimal) == {"packed_mask_type": "document_ids", "return_packed_sequence_metadata": True}


@pytest.mark.requires("convert_text_batch", "xdoc")
@pytest.mark.clause("contract-no-revalidation")
@pytest.mark.parametrize("xdoc", [False, True])
def test_attributes_a_batch_does_not_use_are_not_revalidated_per_batch(backend, xdoc):
    """A contract whose unused optional attribute is invalid (``return_document_ids="yes"``,
    which loader construction would reject) still converts, exactly like the valid contract:
    per batch only the attributes in use are read."""
    rows = stored_rows()
    valid = SimpleNamespace(packed_mask_type="document_ids", return_packed_sequence_metadata=True)
    unused_invalid = SimpleNamespace(
        packed_mask_type="document_ids", return_packed_sequence_metadata=True, return_document_ids="yes"
    )
    call = f"convert_text_batch(contract with return_document_ids='yes', xdoc={xdoc})"
    try:
        out = convert(backend, rows, unused_invalid, xdoc=xdoc)
    except (TypeError, ValueError) as error:
        raise clause_failure(
            f"raised {type(error).__name__}({error}), but a per-batch call should not re-validate the contract",
            clause="contract-no-revalidation",
            call=call,
        ) from error
    assert_batch_equal(out, convert(backend, rows, valid, xdoc=xdoc), clause="contract-no-revalidation", call=call)
