"""the loader reads one SampleBatch ahead, so its state covers one batch too many. Breaks: [state-after-start], [state-exact-resume]"""

from mutant_base import reference, reference_with


class _ReadAhead:
    """The pipeline iterator, always one batch ahead (to overlap I/O with the step)."""

    _EMPTY = object()

    def __init__(self, iterator):
        self._iterator = iterator
        self._ahead = self._EMPTY
        self._failure = None

    def _fill(self):
        if self._ahead is self._EMPTY and self._failure is None:
            try:
                self._ahead = next(self._iterator)
            except StopIteration:
                pass
            except BaseException as failure:  # raised when its turn comes, as the stream would
                self._failure = failure

    def __iter__(self):
        return self

    def __next__(self):
        self._fill()
        if self._ahead is self._EMPTY:
            if self._failure is not None:
                raise self._failure
            raise StopIteration
        batch, self._ahead = self._ahead, self._EMPTY
        self._fill()
        return batch

    def close(self):
        close = getattr(self._iterator, "close", None)
        if close is not None:
            close()


class ZephonDataLoader(reference.ZephonDataLoader):
    def __next__(self):
        if self._closed:
            raise StopIteration
        if self._iterator is None:
            self._started = True
            try:
                if self._pending_state is not None:
                    state, self._pending_state = self._pending_state, None
                    self._pipeline.restore(state)
                self._iterator = _ReadAhead(iter(self._pipeline))
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


BACKEND = reference_with("m-fn-loader-prefetch-state", ZephonDataLoader=ZephonDataLoader)
