"""require_supported_packing_contract takes a bool max_sequence_length for an int. Breaks: [contract-validation]"""

from types import SimpleNamespace

from mutant_base import reference, reference_with

_ATTRIBUTES = (
    "packed_mask_type",
    "return_packed_sequence_metadata",
    "requires_packed_sequence_metadata",
    "return_document_ids",
)


def require_supported_packing_contract(contract):
    max_sequence_length = getattr(contract, "max_sequence_length", None)
    if isinstance(max_sequence_length, bool):  # isinstance(True, int) holds
        view = {name: getattr(contract, name) for name in _ATTRIBUTES if hasattr(contract, name)}
        contract = SimpleNamespace(**view, max_sequence_length=int(max_sequence_length))
    return reference.require_supported_packing_contract(contract)


BACKEND = reference_with(
    "m-fn-contract-accepts-bool-length", require_supported_packing_contract=require_supported_packing_contract
)
