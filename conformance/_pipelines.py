"""Real Zephon pipelines over the committed corpus, for loader and real-data scenarios.

One builder, so every scenario reads the same data the same way: the Node.js API corpus
(``golden/corpus/nodejs-api``) → ``tokenize`` with the committed BPE (BOS/EOS bracketing,
long documents split) → ``pack_flat(seq_len + 1, first_fit)`` → ``batch(batch_size)``.
Deterministic: inline runner, no prefetch, fixed seed. Zephon's scratch state goes under
``scratch_dir`` (never the shared ``$TMPDIR``).
"""

from __future__ import annotations

import os
from pathlib import Path

from conformance._corpus import PAD_ID, SHARD_DIR, CorpusTokenizer

__all__ = ["RecordingPipeline", "corpus_pipeline"]


def corpus_pipeline(
    scratch_dir: Path,
    *,
    seq_len: int = 1024,
    batch_size: int = 4,
    runner: str = "inline",
    exhausted_policy: str = "redistribute",
    seed: int = 1234,
):
    """A ``zephon.Pipeline`` yielding ``SampleBatch``es of ``batch_size`` rows of
    ``seq_len + 1`` unshifted tokens (so the model sees ``seq_len``).

    ``exhausted_policy="redistribute"`` reads every document exactly once and then ends the
    stream; ``"repeat"`` never ends.
    """
    from zephon import Dataset, Pipeline, StaticMixtureWorkSource

    scratch_dir = Path(scratch_dir)
    os.environ["ZEPHON_CATALOG_DIR"] = str(scratch_dir / "catalog")
    dataset = Dataset.from_path("nodejs_api", str(SHARD_DIR))
    work_source = StaticMixtureWorkSource(
        [dataset], {"nodejs_api": 1.0}, chunk_size=16, seed=seed, exhausted_policy=exhausted_policy
    )
    options = {"runner": runner, "aggregate_dir": str(scratch_dir / "aggregate"), "run_id": "batchspec"}
    if runner == "inline":
        options.update(prefetch_batches=0, default_stage_prefetch=0)
    return (
        Pipeline(work_source)
        .tokenize(
            tokenizer=CorpusTokenizer(),
            field="text",
            add_attention_mask=False,
            max_length=seq_len + 1,
            split_long_samples=True,
            special_tokens="bos_eos",
        )
        .pack_flat(seq_len + 1, algorithm="first_fit", num_bins=8, pad_token_id=PAD_ID)
        .batch(batch_size)
        .options(**options)
    )


class RecordingPipeline:
    """A stand-in pipeline over a list of ``SampleBatch``es that records how a loader drives
    it: ``iter()`` calls, batches handed out (``taken``) and how often its stream was closed.
    With ``fail_at``, the stream raises ``failure`` instead of yielding that batch."""

    def __init__(self, batches: list, fail_at: int | None = None, failure: BaseException | None = None):
        self.batches = list(batches)
        self.fail_at = fail_at
        self.failure = failure if failure is not None else RuntimeError("pipeline worker failed")
        self.iter_calls = 0
        self.closed = 0
        self.taken = 0

    def __iter__(self):
        self.iter_calls += 1
        return self._stream()

    def _stream(self):
        try:
            for index, batch in enumerate(self.batches):
                if index == self.fail_at:
                    raise self.failure
                self.taken += 1
                yield batch
        finally:
            self.closed += 1
