"""Golden files (``golden/`` at the repository root; package data ``batchspec.golden`` once
installed): defining, generating, storing, loading and running golden cases. One concern per module:

- ``api``: the public case API that ``golden/cases/*.py`` import (``Case``, ``text_batch_inputs``, literals);
- ``discovery``: finding the ``case_*`` functions of ``golden/cases/*.py``;
- ``adapters``: one adapter per golden target (call, capabilities, key order), derived from the
  records of ``conformance/run/functions.py``; ``calls`` (the run functions), with ``call_arguments``
  (building call arguments) and ``loader_script`` (loader scenarios);
- ``errors``: ``GoldenError`` and the error-type map;
- ``file_format`` and ``verified_read``: serialisation, and verified loading (sha256 index, safetensors, JSON);
- ``case_values``: a stored case's inputs, options and expected output for the conformance checks
  that need them on a live object (``conformance/test_*.py``);
- ``build`` (generation from the reference) and ``runner`` (a stored case against a backend);
  both compare with the suite's own asserts, ``conformance/helpers/asserts.py``;
- ``render`` and ``commands``: SPEC.md's golden blocks, and ``python -m batchspec.conformance.tools.goldens``.

``batchspec.conformance.tools.goldens`` re-exports the names other code uses.
"""
