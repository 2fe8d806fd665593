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
    def _open_stream(self):
        return _ReadAhead(super()._open_stream())


BACKEND = reference_with("m-fn-loader-prefetch-state", ZephonDataLoader=ZephonDataLoader)
