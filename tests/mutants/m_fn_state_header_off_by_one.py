"""load_state_dict counts the header as 16 bytes: a 16-byte state fails with struct.error. Breaks: [state-load-validates-first]

The 16-byte state reaches the body-length read, which runs off its end: not 'truncated'.
"""

import struct
from collections.abc import Mapping

from mutant_base import reference, reference_with

MAGIC = b"BSZSTATE"


class ZephonDataLoader(reference.ZephonDataLoader):
    def load_state_dict(self, state):
        # `len(data) < 16` where the header (magic 8, version 1, length 8) is 17 bytes: the state
        # one byte short of a header passes the size check and its length read runs off the end
        data = state.get("zephon") if isinstance(state, Mapping) and not self._started else None
        if isinstance(data, bytes) and len(data) == 16 and data[:8] == MAGIC and data[8] == 1:
            struct.unpack_from(">Q", data, 9)
        return super().load_state_dict(state)


BACKEND = reference_with("m-fn-state-header-off-by-one", ZephonDataLoader=ZephonDataLoader)
