"""the fingerprint hashes json.dumps's default form (unsorted keys, spaces), not canonical JSON. Breaks: [state-fingerprint-canonical]"""

import hashlib
import json

from mutant_base import reference, reference_with

from batchspec.reference.checkpoint import pipeline_description


class ZephonDataLoader(reference.ZephonDataLoader):
    def _fingerprint(self):
        return hashlib.sha256(json.dumps(pipeline_description(self._pipeline)).encode()).hexdigest()


BACKEND = reference_with("m-fn-fingerprint-unsorted-keys", ZephonDataLoader=ZephonDataLoader)
