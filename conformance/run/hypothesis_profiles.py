"""The suite's hypothesis settings profiles, registered on import (conformance/run/plugin.py imports
this module first): ``batchspec`` (the default), ``batchspec-release`` (``--release``),
``batchspec-nightly`` and ``batchspec-sweep``; ``BATCHSPEC_HYPOTHESIS_PROFILE`` chooses one,
``BATCHSPEC_MAX_EXAMPLES`` sets the number of examples per property."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

__all__ = ["NO_SHRINK", "load_run_profile"]

settings.register_profile(
    "batchspec",
    max_examples=int(os.environ.get("BATCHSPEC_MAX_EXAMPLES", "60")),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# Without the shrink phase a failing property reports its first failing example (with its
# @reproduce_failure line) at once; shrinking it to a minimal one took 1 to 2 minutes per failing
# property, which a release verdict does not need. --shrink puts the phase back.
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
# --release: the same examples on every run (a fixed seed derived from each test), no example
# database (the verdict depends on the backend and the suite version only), no shrinking
settings.register_profile(
    "batchspec-release",
    parent=settings.get_profile("batchspec"),
    derandomize=True,
    database=None,
    phases=NO_SHRINK,
)
# nightly: many more examples per property (BATCHSPEC_HYPOTHESIS_PROFILE=batchspec-nightly), for
# a scheduled job rather than a release gate; BATCHSPEC_MAX_EXAMPLES still overrides the count
settings.register_profile(
    "batchspec-nightly",
    parent=settings.get_profile("batchspec"),
    max_examples=int(os.environ.get("BATCHSPEC_MAX_EXAMPLES", "1000")),
)
# sweep: no shrinking (tests/mutants/sweep.py): a mutation sweep needs the verdict and the blame
# of the first failing example, not the smallest one, and shrinking is most of a failing run
settings.register_profile("batchspec-sweep", parent=settings.get_profile("batchspec"), phases=NO_SHRINK)
settings.load_profile(os.environ.get("BATCHSPEC_HYPOTHESIS_PROFILE", "batchspec"))


def load_run_profile(*, release: bool, shrink: bool) -> None:
    """The profile of a run's options: ``--release`` loads ``batchspec-release``; ``--shrink``
    puts the shrink phase back on top of the loaded profile."""
    if release:
        settings.load_profile("batchspec-release")
    if shrink:
        settings.register_profile("batchspec-shrink", parent=settings.default, phases=list(Phase))
        settings.load_profile("batchspec-shrink")
