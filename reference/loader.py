"""``ZephonDataLoader``: one owned stream of a ``zephon.Pipeline``, yielding converted batches.

Mirrors upstream ``nemo_automodel/components/datasets/zephon/loader.py`` (the
``zephon.loader`` page, docs/sources.md#seed-000). Its state (``state_dict``/``load_state_dict``)
is Zephon's checkpoint in the envelope of ``batchspec.reference.checkpoint``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from batchspec.reference.checkpoint import (
    decode_state,
    encode_state,
    pipeline_fingerprint,
    pipeline_topology,
)
from batchspec.reference.contract import (
    BatchOutputFormat,
    PackedSequenceContract,
    TrainingBatch,
    require_supported_packing_contract,
)
from batchspec.reference.output import check_output_format

__all__ = ["ZephonDataLoader"]


class ZephonDataLoader(Iterator[TrainingBatch]):
    """One owned stream of a Zephon pipeline, yielding converted batches.

    Over the real corpus pipeline it yields batches that hold every clause of
    [real-data-pipeline]. An iterator of ``TrainingBatch`` (``collections.abc.Iterator``)
    [loader-iterator];
    construction starts nothing [loader-construct-lazy] and validates once
    [loader-construct-validates].

    Args:
        pipeline: a ``zephon.Pipeline`` (anything whose ``iter()`` gives an iterator of
            ``SampleBatch``; the iterator's ``close()`` is called when present). Not started
            by construction.
        convert_batch: ``SampleBatch -> TrainingBatch``, e.g. ``convert_text_batch`` with its
            options bound. The loader yields exactly what it returns [loader-next].
        output_format: ``"batched"`` or ``"thd"``; checked here and kept as
            ``self.output_format`` for the training framework.
        packing_contract: keyword-only; checked once here by
            ``require_supported_packing_contract`` and kept as ``self.packing_contract``.
            Neither is applied to the batches: they are what ``convert_batch`` returns, and a
            ``convert_batch`` bound to another format or contract is the caller's
            configuration error (A3).

    Raises:
        TypeError: ``convert_batch`` is not callable, or the contract has a missing or
            mistyped attribute [loader-construct-validates].
        ValueError: an unknown ``output_format`` or mask type [loader-construct-validates,
            types-output-format].
    """

    # [loader-distributed-checkpointing] A framework reads this to route state_dict() through
    # its all-rank path: every rank, TP/PP peers included, joins the checkpoint collective.
    use_distributed_checkpointing = True

    def __init__(
        self,
        pipeline: Any,
        convert_batch: Callable[[Any], TrainingBatch],
        output_format: BatchOutputFormat = "batched",
        *,
        packing_contract: PackedSequenceContract,
    ) -> None:
        if not callable(convert_batch):
            raise TypeError(f"convert_batch must be callable, got {type(convert_batch).__name__}")
        check_output_format(output_format)
        require_supported_packing_contract(packing_contract)
        self._pipeline = pipeline
        self._convert_batch = convert_batch
        self.output_format = output_format
        self.packing_contract = packing_contract
        self._component_tokens: Counter[int] = Counter()
        self._iterator: Iterator[Any] | None = None
        self._restored_checkpoint = b""
        self._pending_state: dict | None = None  # decoded, applied at the first next()
        self._started = False
        self._closed = False

    def __iter__(self) -> ZephonDataLoader:
        """Return this loader; a second ``iter()`` never restarts the stream [loader-iter-self]."""
        return self

    def __next__(self) -> TrainingBatch:
        """``convert_batch(sample_batch)`` for the stream's next ``SampleBatch``, unchanged
        [loader-next].

        The first call applies a loaded state, then starts the one owned stream
        [state-iter-then-load]. Adds each record's ``meta.component_token_counts`` into
        ``_component_tokens`` [loader-component-tokens]. On exhaustion the loader closes
        itself [loader-exhaustion]; after ``close()`` every call raises ``StopIteration``
        [loader-close].

        Raises:
            StopIteration: the stream is exhausted, or the loader was closed.
            BaseException: whatever ``iter(pipeline)``, the stream or ``convert_batch``
                raised, the same object, after the loader closed itself
                [loader-failure-closes].
        """
        if self._closed:
            raise StopIteration
        if self._iterator is None:
            self._started = True
            try:
                self._iterator = self._open_stream()
            except BaseException:
                self.close()
                raise
        try:
            sample_batch = next(self._iterator)
            for record in sample_batch.records:
                self._component_tokens.update(record.meta.component_token_counts or {})
            return self._convert_batch(sample_batch)
        except BaseException:
            self.close()
            raise

    def _open_stream(self) -> Iterator[Any]:
        """Apply a loaded state, then start the one owned stream: ``iter(pipeline)``
        [state-iter-then-load].

        The one place the loader starts the stream (at the first ``next()``), so a backend or
        a test can substitute another way of reading it.
        """
        # [state-load-validates-first] Zephon's restore is lazy too; apply before iter().
        if self._pending_state is not None:
            state, self._pending_state = self._pending_state, None
            self._pipeline.restore(state)
        return iter(self._pipeline)

    def state_dict(self) -> dict[str, bytes]:
        """``{"zephon": bytes}`` for the current stream position.

        Before the first ``next()``: the initial ``b""`` or the bytes last loaded, without
        touching the pipeline [state-before-start, state-roundtrip]. Once iteration started
        (also after exhaustion and after ``close()``): ``pipeline.checkpoint()`` in the
        envelope [state-after-start, state-envelope, state-end-of-epoch]. With
        ``world_size > 1`` the checkpoint is collective: every rank counted in ``world_size``
        (TP/PP peers included) must call this, and all get the same bytes
        [state-all-ranks-identical, state-collective-all-ranks].

        Raises:
            TimeoutError: another rank did not call ``state_dict()`` within the pipeline's
                ``aggregate_timeout_s``; Zephon's message (on global rank 0 it names the
                missing ranks) is included and chained [state-collective-timeout].
        """
        if not self._started:
            return {"zephon": self._restored_checkpoint}
        topology = pipeline_topology(self._pipeline)
        try:
            checkpoint = self._pipeline.checkpoint()
        except RuntimeError as error:
            if "timed out" not in str(error).lower():
                raise
            raise TimeoutError(
                f"state_dict() timed out: the checkpoint is collective over all {topology['world_size']} ranks "
                f"(TP/PP peers included) and not every rank called state_dict() in time; zephon said: {error}"
            ) from error
        return {"zephon": encode_state(checkpoint, topology=topology, fingerprint=self._fingerprint())}

    def _fingerprint(self) -> str:
        """The fingerprint of this loader's pipeline [state-fingerprint-canonical].

        The one place the loader computes it (for ``state_dict`` and ``load_state_dict``), so
        a backend or a test can substitute another implementation of the canonical form.

        Raises:
            TypeError: the pipeline has no Zephon graph to describe.
        """
        return pipeline_fingerprint(self._pipeline)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Load ``state["zephon"]`` before iteration; Zephon restores it at the first ``next()``.

        Checks run in this order, and a rejected state changes nothing
        [state-load-validates-first]: after the first ``next()`` every call raises
        ``RuntimeError``, whatever ``state`` is [state-load-after-start]; then the argument
        [state-load-errors]; then ``b""`` [state-load-empty]; then the envelope's checks
        (``decode_state``) [state-envelope, state-fingerprint, state-canonical-replicas].
        Zephon applies the loaded checkpoint at the first ``next()``, so the stream continues
        exactly where the saving loader stopped, on every rank at its own cursor and, with
        ``canonical_replicas`` fixed, on another ``dp_degree`` [state-exact-resume,
        state-multirank-resume, state-elastic-resume, state-tp-peers].

        Raises:
            RuntimeError: iteration already started [state-load-after-start].
            ValueError: ``state`` is not a Mapping or has no ``"zephon"`` [state-load-errors];
                ``b""`` after a non-empty load [state-load-empty]; the bytes fail a check,
                the message starting with its name: ``bad magic``, ``unsupported version``,
                ``truncated``, ``checksum mismatch``, ``malformed body``, ``fingerprint
                mismatch`` or ``canonical_replicas changed`` [state-load-validates-first].
            TypeError: ``state["zephon"]`` is not bytes [state-load-errors]; the pipeline has
                no Zephon graph to fingerprint.
        """
        if self._started:
            raise RuntimeError("load_state_dict() must be called before iteration starts; this loader already started")
        if not isinstance(state, Mapping):
            raise ValueError(
                f"state must be a Mapping with a 'zephon' key, got {type(state).__name__}"
            )  # SPEC: ValueError
        if "zephon" not in state:
            raise ValueError(f"state must hold a 'zephon' key, got keys {sorted(map(str, state))}")
        data = state["zephon"]
        if not isinstance(data, bytes):
            raise TypeError(f"state['zephon'] must be bytes, got {type(data).__name__}")
        if data == b"":
            # [state-load-empty] b"" is a never-started stream: a no-op only on a fresh loader.
            if self._restored_checkpoint:
                raise ValueError("empty state requires a fresh loader; this loader already loaded a non-empty state")
            return
        topology = pipeline_topology(self._pipeline)
        decoded = decode_state(
            data,
            expected_fingerprint=self._fingerprint(),
            expected_canonical_replicas=topology["canonical_replicas"],
        )
        # [state-load-twice] The last successful load wins.
        self._pending_state = decoded
        self._restored_checkpoint = data

    def close(self) -> None:
        """Release the pipeline's workers; idempotent [loader-close]."""
        self._closed = True
        iterator, self._iterator = self._iterator, None
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
