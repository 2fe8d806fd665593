"""conformance/scheduling.py: a dead worker's running test is reported once and marked done; the
rest of its group goes back in the queue (pytest-xdist's own scope schedulers queue the crashed
test again, so every replacement worker ran it and died)."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from xdist.scheduler import LoadGroupScheduling

from batchspec.conformance.scheduling import SCHEDULERS, CrashIsolatingLoadGroup


def _scheduler(kind: type, workload: dict) -> LoadGroupScheduling:
    """A scheduler whose worker ``"dead"`` holds ``workload`` (group -> test id -> done), without
    pytest-xdist's configuration (its __init__ reads the run's workers)."""
    scheduler = object.__new__(kind)
    scheduler.workqueue = OrderedDict()
    scheduler.assigned_work = {"dead": workload, "alive": {}}
    scheduler.registered_collections = {}
    scheduler._reschedule = lambda node: None
    return scheduler


def test_upstream_queues_the_crashed_test_again():
    scheduler = _scheduler(LoadGroupScheduling, {"g": {"a": True, "b": False, "c": False}})
    assert scheduler.remove_node("dead") == "b"
    assert scheduler.workqueue["g"] == {"a": True, "b": False, "c": False}  # b would run again


@pytest.mark.parametrize("kind", SCHEDULERS.values(), ids=SCHEDULERS.keys())
def test_the_crashed_test_is_done_and_the_rest_of_its_group_is_queued(kind):
    scheduler = _scheduler(kind, {"done": {"x": True}, "g": {"a": True, "b": False, "c": False}})
    assert scheduler.remove_node("dead") == "b"
    assert scheduler.workqueue == OrderedDict(g={"a": True, "b": True, "c": False})  # only c is left to run
    assert "dead" not in scheduler.assigned_work


def test_a_crash_on_the_last_test_of_a_group_queues_nothing_and_is_still_reported():
    scheduler = _scheduler(CrashIsolatingLoadGroup, {"g": {"a": True, "b": False}})
    assert scheduler.remove_node("dead") == "b" and not scheduler.workqueue


def test_a_worker_that_finished_its_work_reports_no_crash():
    scheduler = _scheduler(CrashIsolatingLoadGroup, {"g": {"a": True}})
    assert scheduler.remove_node("dead") is None and not scheduler.workqueue
