"""close() drops the stream without closing it. Breaks: [loader-close], [loader-exhaustion], [loader-failure-closes]"""

from mutant_base import reference, reference_with


class ZephonDataLoader(reference.ZephonDataLoader):
    def close(self) -> None:
        self._closed = True
        self._iterator = None  # left to the garbage collector


BACKEND = reference_with("m-fn-loader-close-leaves-workers", ZephonDataLoader=ZephonDataLoader)
