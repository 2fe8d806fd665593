"""Public helpers of the conformance suite, for its checks, the golden case API and a
backend team's own tests: ``asserts`` (exact comparisons that explain themselves, facts in
error messages), ``inputs`` (Zephon ``SampleBatch``es and test contracts), ``literals``
(tensor literals and the worked examples' rows), ``strategies`` (hypothesis), ``invariants``
(the clause properties checked on any converted batch), ``pipelines`` and ``corpus`` (real
Zephon pipelines over the committed corpus), ``envelope`` and ``state_script`` (checkpoint
state bytes and scripts), ``storage`` (storage sharing and snapshots), ``stored`` (inputs of
stored golden cases as live objects)."""
