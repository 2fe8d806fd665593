"""Public helpers of the conformance suite, for its checks, the golden case API and a
backend team's own tests: ``asserts`` (exact comparisons that explain themselves, the clause
tag of a failure, facts in error messages), ``sample_batches`` (Zephon ``SampleBatch``es and test
contracts), ``literals`` (tensor literals and the worked examples' rows), ``strategies``
(hypothesis), ``datums`` (drawn ``Datum`` cases and their collation), ``routes`` (every output
route of ``convert_text_batch``), ``fields`` (``TrainingBatch`` comparisons blamed on the
differing field's clauses), ``invariants`` (the clause properties checked on any converted
batch), ``metamorphic`` (what the metamorphic properties share), ``layouts`` and
``layout_relation`` (non-contiguous inputs, [tb-layout]), ``storage`` (where returned tensors
live, what they share, snapshots of inputs), ``pipelines`` and ``corpus`` (real Zephon
pipelines over the committed corpus), ``envelope`` and ``state_script`` (checkpoint state bytes
and scripts). The inputs of stored golden cases as live objects are ``golden/case_values.py``'s."""
