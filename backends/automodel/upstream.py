"""Import upstream nemo-automodel 0.7.0's ``datum``, ``utils`` and ``packing`` modules with only torch + numpy.

The ``automodel`` backend's loader (``backends/automodel/__init__.py``), also used by ``bench/``
and ``tests/upstream/test_upstream_differential.py``. Importing it imports the backend package, which
loads upstream: without nemo-automodel 0.7.0 the import itself raises the ``ImportError`` below,
so a caller that runs without upstream imports it inside its ``try``.

Install once, without dependencies (so pip never touches torch)::

    .venv/bin/pip install --no-deps nemo-automodel==0.7.0

``nemo_automodel/__init__.py``, ``components/__init__.py``, ``components/datasets/__init__.py``
and ``components/datasets/packing.py`` import only the standard library and torch.
``components/datasets/utils.py`` imports ``transformers.masking_utils`` at module level, for
mask helpers the collaters never call. When ``transformers`` is not installed, a stub
``transformers`` / ``transformers.masking_utils`` (whose two functions raise if called) is put
in ``sys.modules`` for the duration of the import only, then removed again, so no other test
sees a fake ``transformers``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager

UPSTREAM_VERSION = "0.7.0"
INSTALL_COMMAND = f".venv/bin/pip install --no-deps nemo-automodel=={UPSTREAM_VERSION}"


def _stub_mask_function(name: str):
    def stub(*args, **kwargs):
        raise RuntimeError(f"transformers.masking_utils.{name} is a stub: transformers is not installed")

    stub.__name__ = name
    return stub


@contextmanager
def _transformers_stub() -> Iterator[None]:
    """Provide ``transformers.masking_utils`` while inside, when the real one is missing."""
    if importlib.util.find_spec("transformers") is not None:
        yield  # the real package is installed: use it
        return
    package = types.ModuleType("transformers")
    masking_utils = types.ModuleType("transformers.masking_utils")
    masking_utils.__dict__.update(
        create_causal_mask=_stub_mask_function("create_causal_mask"),
        create_sliding_window_causal_mask=_stub_mask_function("create_sliding_window_causal_mask"),
    )
    package.__dict__["masking_utils"] = masking_utils
    saved = {name: sys.modules.get(name) for name in ("transformers", "transformers.masking_utils")}
    sys.modules["transformers"] = package
    sys.modules["transformers.masking_utils"] = masking_utils
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load_upstream_modules() -> types.SimpleNamespace:
    """Upstream's ``datum``, ``utils`` and ``packing`` modules
    (``nemo_automodel.components.datasets.*``) and its release ``version`` (``"0.7.0"``), as
    attributes of one namespace.

    Raises:
        ImportError: nemo-automodel is missing, or it is not version 0.7.0 (the message says
            how to install it).
    """
    if importlib.util.find_spec("nemo_automodel") is None:
        raise ImportError(
            f"upstream nemo-automodel {UPSTREAM_VERSION} is not installed; install it without its "
            f"dependencies (torch stays as it is): {INSTALL_COMMAND}"
        )
    package = importlib.import_module("nemo_automodel")
    version = getattr(package, "__version__", "")
    if version.split("+")[0] != UPSTREAM_VERSION:
        raise ImportError(
            f"nemo-automodel {version} is installed but batchspec pins {UPSTREAM_VERSION}: {INSTALL_COMMAND}"
        )
    with _transformers_stub():
        utils = importlib.import_module("nemo_automodel.components.datasets.utils")
        datum = importlib.import_module("nemo_automodel.components.datasets.datum")
    packing = importlib.import_module("nemo_automodel.components.datasets.packing")
    # the release, without the "+<commit>" that nemo_automodel/package_info.py appends from
    # `git rev-parse` in its own folder (inside a repository's .venv, that repository's commit)
    return types.SimpleNamespace(datum=datum, utils=utils, packing=packing, version=version.split("+")[0])


def load_upstream() -> tuple[types.ModuleType, types.ModuleType]:
    """Upstream's ``(datum, utils)`` modules (``load_upstream_modules``).

    Raises:
        ImportError: as ``load_upstream_modules``.
    """
    modules = load_upstream_modules()
    return modules.datum, modules.utils
