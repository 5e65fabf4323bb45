"""The writer's watchdog (``alarmhub.store.watchdog``): the bound a database call of the writer
has, and the watchdog acting once a call has run that long, never while none runs."""

from __future__ import annotations

import threading
import time

from alarmhub.store.watchdog import STUCK_MIN_SECONDS, STUCK_TIMEOUTS, Watchdog, stuck_seconds


def test_the_bound_is_some_commit_timeouts_and_never_short() -> None:
    assert stuck_seconds(20.0) == STUCK_TIMEOUTS * 20.0
    assert stuck_seconds(2.0) == STUCK_MIN_SECONDS
    assert stuck_seconds(2.0) > 2.0


def test_a_call_running_past_the_limit_is_reported_once() -> None:
    stuck: list[float] = []
    told = threading.Event()

    def on_stuck(seconds: float) -> None:
        stuck.append(seconds)
        told.set()

    busy: list[float | None] = [None]
    watchdog = Watchdog(lambda: busy[0], 0.2, on_stuck, check_seconds=0.01).start()
    try:
        time.sleep(0.3)  # nothing runs: nothing to report however long
        assert not stuck
        busy[0] = time.monotonic()
        assert told.wait(10)
    finally:
        watchdog.stop()
    assert len(stuck) == 1
    assert stuck[0] >= 0.2


def test_calls_that_end_in_time_are_left_alone() -> None:
    stuck: list[float] = []
    busy: list[float | None] = [None]
    watchdog = Watchdog(lambda: busy[0], 0.5, stuck.append, check_seconds=0.01).start()
    try:
        for _ in range(20):  # calls of 0.05 s each, for a second in all
            busy[0] = time.monotonic()
            time.sleep(0.05)
            busy[0] = None
    finally:
        watchdog.stop()
    assert not stuck


def test_a_call_the_server_is_working_on_is_waited_for() -> None:
    """A commit waiting for a synchronous standby that is gone: the database is not committing
    (decisions §14), the connection is not silent; asked again a limit later."""
    stuck: list[float] = []
    asked: list[float] = []
    working = [True]

    def server_working() -> bool:
        asked.append(time.monotonic())
        return working[0]

    since = time.monotonic()
    watchdog = Watchdog(lambda: since, 0.2, stuck.append, 0.01, working=server_working).start()
    try:
        deadline = time.monotonic() + 10
        while len(asked) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not stuck
        working[0] = False
        while not stuck and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        watchdog.stop()
    assert len(asked) >= 3
    assert asked[1] - asked[0] >= 0.2  # not asked again before another limit has passed
    assert len(stuck) == 1
