"""The batchspec conformance suite (``batchspec.conformance``), sorted by role:

- the top level: the checks, one ``test_<section>.py`` per SPEC section (CONTRIBUTING.md,
  "Names") and the cross-cutting ones (``test_goldens.py``, ``test_layouts*.py``,
  ``test_input_dtypes.py``, ``test_global_state.py``); ``conftest.py`` loads the plugin for
  runs from a checkout;
- ``properties/``, ``model/``, ``multirank/``: checks of their own kind (hypothesis properties,
  the model-level equivalence checks, the multi-rank checkpoint scenarios), with what they need;
- ``helpers/``: what the checks build and compare with (asserts, sample batches, strategies, layouts,
  pipelines), public to a backend team's own tests;
- ``golden/``: the golden cases' API, verified reading, runner and generation;
- ``run/``: the run machinery: the pytest plugin (``run/plugin.py``) and what a run goes through,
  from the options and the backend to each test's record, the verdict (``run/verdict.py``) and the
  report (``run/report.py``), the run's state (``run/stash.py``), and what the suite reads of
  SPEC.md (``run/spec.py``, ``run/functions.py``, ``run/interface.py``);
- ``tools/``: the command-line tools and generators, ``python -m batchspec.conformance.tools.X``
  (``clause_index``, ``goldens``, ``scoreboard``).

CONTRIBUTING.md's "Map of conformance/" names every module and what it holds.
"""
