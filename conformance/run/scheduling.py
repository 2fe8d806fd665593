"""pytest-xdist scheduling that keeps a crash to the test it happened in.

pytest-xdist's scope schedulers (``--dist=loadgroup``, the ``batchspec`` command's default, and
``loadscope`` / ``loadfile``) hand a worker whole groups of tests. When the worker dies (a
backend that aborts the process, or pytest-timeout killing a hung test), their ``remove_node``
reports the test that was running as crashed but puts the worker's whole unfinished group back
in the queue, the crashed test included: every replacement worker runs it again and dies again,
until pytest-xdist's limit of restarts ends the run with the other tests never run (issue 31:
"9 failed, 1 passed" for two tests). ``--dist=load`` marks the crashed test done; these
schedulers do the same, and keep the groups (the multi-rank launchers' scenarios share one
worker, conformance/multirank/launchers.py).

They also give a replacement worker work it can run. A worker runs a test only once it holds
the next one (or has been told to shut down); upstream's rescheduling gives a node one group at a
time, so a replacement handed a one-test group while other groups were still queued waited for
ever, and so did the run (one worker, ``-n 1``: a one-core runner, the mutant sweep; issue 33,
``mt_unpad_tail_mask_le``). And a node still collecting (a second replacement) was rescheduled
before its collection was in: ``KeyError`` in pytest-xdist, an internal error that ended the
run. Here a node is given groups until it holds more than two pending tests or the queue is
empty (then it is told to shut down, so it runs its last test), and only once its collection is
registered (``schedule()`` runs again when it is).
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling, LoadGroupScheduling, LoadScopeScheduling

__all__ = ["SCHEDULERS", "crash_isolating"]


class _CrashIsolating(LoadScopeScheduling):
    """``remove_node`` of a scope scheduler, with the crashed test marked done before the rest of
    its group is queued again."""

    def remove_node(self, node) -> str | None:
        """The test that was running when ``node`` died (its first unfinished one), now marked done,
        or None when ``node`` had nothing left; the groups with unfinished tests go back in the
        queue and the other workers are given work."""
        workload = self.assigned_work.pop(node)
        pending = [(scope, nodeid) for scope, unit in workload.items() for nodeid, done in unit.items() if not done]
        if not pending:
            return None
        scope, crashitem = pending[0]
        workload[scope][crashitem] = True  # failed once, as a crash: never run again
        for scope, unit in workload.items():
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem

    def _reschedule(self, node) -> None:
        """Give ``node`` queued groups until it holds more than two pending tests (a worker runs a
        test only once it holds the next one), and tell it to shut down once the queue is empty
        (so it runs its last test); nothing for a node shutting down or still collecting."""
        if node.shutting_down or node not in self.registered_collections:
            return
        while self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
            self._assign_work_unit(node)
        if not self.workqueue:
            node.shutdown()


class CrashIsolatingLoadGroup(_CrashIsolating, LoadGroupScheduling):
    """``--dist=loadgroup``, a crashed test run once."""


class CrashIsolatingLoadScope(_CrashIsolating, LoadScopeScheduling):
    """``--dist=loadscope``, a crashed test run once."""


class CrashIsolatingLoadFile(_CrashIsolating, LoadFileScheduling):
    """``--dist=loadfile``, a crashed test run once."""


SCHEDULERS = {
    "loadgroup": CrashIsolatingLoadGroup,
    "loadscope": CrashIsolatingLoadScope,
    "loadfile": CrashIsolatingLoadFile,
}


def crash_isolating(config, log):
    """The scheduler for ``config``'s ``--dist`` when it is a scope mode, else None (pytest-xdist's
    own: ``load``, ``worksteal`` and ``each`` already run a crashed test once)."""
    scheduler = SCHEDULERS.get(config.getvalue("dist"))
    return None if scheduler is None else scheduler(config, log)
