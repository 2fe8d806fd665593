"""load_state_dict takes a topology's dp_degree 0 (checked `>= 0`). Breaks: [state-envelope], [state-load-validates-first]

The topology check reads `>= 0` for dp_degree and `>= 1` for the others: world_size 0 and a string
canonical_replicas are refused; dp_degree 0, one below its bound, is read as a valid body.
"""

import json

from mutant_base import reference, reference_with

from batchspec.reference import checkpoint

_parse_body = checkpoint._parse_body


def _dp_degree_from_zero(raw):
    # the topology check reads `topology[key] >= (0 if key == "dp_degree" else 1)`: a body that
    # differs from a valid one only by dp_degree 0 passes check 5
    try:
        body = json.loads(raw)
        zero = type(body["topology"]["dp_degree"]) is int and body["topology"]["dp_degree"] == 0
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        zero = False
    if not zero:
        return _parse_body(raw)
    body["topology"]["dp_degree"] = 1
    parsed = _parse_body(checkpoint.canonical_json(body))
    parsed["topology"]["dp_degree"] = 0
    return parsed


class ZephonDataLoader(reference.ZephonDataLoader):
    def load_state_dict(self, state):
        checkpoint._parse_body = _dp_degree_from_zero
        try:
            return super().load_state_dict(state)
        finally:
            checkpoint._parse_body = _parse_body


BACKEND = reference_with("m-fn-state-dp-degree-zero-accepted", ZephonDataLoader=ZephonDataLoader)
