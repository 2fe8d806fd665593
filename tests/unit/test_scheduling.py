"""conformance/run/scheduling.py: a dead worker's running test is reported once and marked done; the
rest of its group goes back in the queue (pytest-xdist's own scope schedulers queue the crashed
test again, so every replacement worker ran it and died)."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from xdist.scheduler import LoadGroupScheduling

from batchspec.conformance.run.scheduling import SCHEDULERS, CrashIsolatingLoadGroup


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


class _Node:
    """A worker as the scheduler sees it: the test indexes it was sent, and whether it was told
    to shut down."""

    def __init__(self, name: str) -> None:
        self.name, self.sent, self.shutting_down = name, [], False

    def send_runtest_some(self, indexes) -> None:
        self.sent.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return self.name


def _one_worker_after_a_crash(kind: type) -> tuple[LoadGroupScheduling, _Node]:
    """One worker (``-n 1``) that died on test "a" of four one-test groups, and its replacement
    once its collection is in: what pytest-xdist's DSession does (remove_node, add_node,
    add_node_collection, schedule)."""
    scheduler = object.__new__(kind)
    scheduler.numnodes, scheduler.log = 1, lambda *args: None
    tests = ["a", "b", "c", "d"]
    dead, new = _Node("gw0"), _Node("gw1")
    scheduler.collection = list(tests)
    scheduler.workqueue = OrderedDict()
    scheduler.assigned_work = {dead: {t: {t: False} for t in tests}}
    scheduler.registered_collections = {dead: list(tests)}
    dead.shutting_down = True  # the initial distribution sent it every test, then shutdown
    assert scheduler.remove_node(dead) == "a"
    scheduler.add_node(new)
    scheduler.schedule()  # a replacement still collecting is given nothing (pytest-xdist: KeyError)
    assert new.sent == []
    scheduler.registered_collections[new] = list(tests)
    scheduler.schedule()
    return scheduler, new


def test_upstream_leaves_a_lone_replacement_worker_holding_one_test():
    """pytest-xdist's own rescheduling gives the replacement one group (one test) and keeps the
    rest queued: the worker waits for a next test that never comes, and the run hangs."""
    scheduler = object.__new__(LoadGroupScheduling)
    scheduler.numnodes, scheduler.log = 1, lambda *args: None
    new = _Node("gw1")
    scheduler.collection = ["b", "c", "d"]
    scheduler.workqueue = OrderedDict((t, {t: False}) for t in ("b", "c", "d"))
    scheduler.assigned_work = {new: {}}
    scheduler.registered_collections = {new: ["b", "c", "d"]}
    scheduler.schedule()
    assert new.sent == [0] and not new.shutting_down and scheduler.workqueue


@pytest.mark.parametrize("kind", SCHEDULERS.values(), ids=SCHEDULERS.keys())
def test_a_lone_replacement_worker_gets_the_rest_and_is_told_to_shut_down(kind):
    """After the crash, the replacement holds every test left to run but the crashed one (here
    three one-test groups: more than two pending) or has been told to shut down: it never waits
    for a next test with work still queued."""
    scheduler, new = _one_worker_after_a_crash(kind)
    assert sorted(new.sent) == [1, 2, 3] and new.shutting_down and not scheduler.workqueue
