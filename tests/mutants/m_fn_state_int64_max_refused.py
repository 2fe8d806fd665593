"""load_state_dict refuses a state integer of 2**63 - 1 (`n < 2**63 - 1`). Breaks: [state-load-validates-first], [state-body-valid]

The structure check's 64-bit bound is one short: a counter of int64's largest value has the
structure of the pipeline's checkpoint: check 5 does not fail, so naming it is wrong.
"""

from mutant_base import reference, reference_with

from batchspec.reference import checkpoint_body

_END = checkpoint_body._INT64_END


class ZephonDataLoader(reference.ZephonDataLoader):
    def load_state_dict(self, state):
        # the structure check's integer bound is `value < 2**63 - 1`, where 2**63 - 1 is in range
        checkpoint_body._INT64_END = _END - 1
        try:
            return super().load_state_dict(state)
        finally:
            checkpoint_body._INT64_END = _END


BACKEND = reference_with("m-fn-state-int64-max-refused", ZephonDataLoader=ZephonDataLoader)
