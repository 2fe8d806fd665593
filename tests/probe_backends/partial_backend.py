"""A backend that implements only ``get_unpad_data`` and declares nothing: the suite must
infer its capabilities and report every other test as not supported."""

from types import SimpleNamespace

from batchspec import reference

# The module itself is a backend too (``--backend=partial_backend``); it targets the same SPEC.
BATCHSPEC_SPEC_VERSION = reference.BATCHSPEC_SPEC_VERSION

BACKEND = SimpleNamespace(
    get_unpad_data=reference.get_unpad_data,
    __version__="partial-0",
    BATCHSPEC_SPEC_VERSION=reference.BATCHSPEC_SPEC_VERSION,
)
