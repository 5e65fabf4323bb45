"""The event streams' shared parts without a database: the outbox hub reads once a look however
many streams are open, wakes them when something came, keeps the recent events for them and
marks the streams of revoked keys; the stream budget counts per key, per address and in all."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from alarmhub.api import stream_hub
from alarmhub.api.stream_hub import OutboxHub
from alarmhub.node.listener_limits import StreamBudget, StreamRefused
from alarmhub.settings import Settings
from alarmhub.store import api_keys
from alarmhub.store import events as outbox

T = TypeVar("T")


class Outbox:
    """Stands for the database: the events, the valid key names, and the reads made."""

    def __init__(self) -> None:
        self.events: list[outbox.Event] = []
        self.valid = {"kept"}
        self.reads = 0

    def add(self, count: int) -> None:
        start = len(self.events)
        self.events += [outbox.Event(start + n + 1, "alarm.raised", "700001", "{}")
                        for n in range(count)]  # fmt: skip

    async def read(self, work: Callable[[Any], T]) -> T:
        self.reads += 1
        return work(None)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Outbox:
    box = Outbox()
    monkeypatch.setattr(outbox, "newest", lambda _: len(box.events))
    monkeypatch.setattr(outbox, "after", lambda _, after, limit: box.events[after : after + limit])
    monkeypatch.setattr(api_keys, "valid_names", lambda _, names: names & box.valid)
    monkeypatch.setattr(stream_hub, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(stream_hub, "STREAM_CHECK_SECONDS", 0.0)
    return box


def test_one_read_a_look_however_many_streams_and_only_news_wakes_them(fake: Outbox) -> None:
    fake.add(3)

    async def scenario() -> None:
        hub = OutboxHub(fake, lambda: False)
        followers = [hub.join("kept") for _ in range(500)]
        while hub.head is None:
            await asyncio.sleep(0.01)
        for follower in followers:
            follower.wake.clear()
        reads = fake.reads
        await asyncio.sleep(0.2)  # looks with nothing new: nobody woken
        looks = fake.reads - reads
        assert 0 < looks < 500, "one read a look (and a key check), not one a stream"
        assert not any(follower.wake.is_set() for follower in followers)
        fake.add(2)
        await asyncio.wait_for(followers[-1].wake.wait(), 30)
        assert all(follower.wake.is_set() for follower in followers)
        assert [e.event_id for e in hub.after(3) or []] == [4, 5]
        assert hub.after(2) is None, "older than what the hub kept: the stream reads itself"
        for follower in followers:
            hub.leave(follower)

    asyncio.run(scenario())


def test_streams_of_a_revoked_key_are_marked_and_woken(fake: Outbox) -> None:
    async def scenario() -> None:
        hub = OutboxHub(fake, lambda: False)
        kept, gone = hub.join("kept"), hub.join("gone")
        await asyncio.wait_for(gone.wake.wait(), 30)
        while not gone.revoked:
            await asyncio.sleep(0.01)
        assert not kept.revoked
        hub.leave(kept)
        hub.leave(gone)

    asyncio.run(scenario())


def test_the_budget_counts_per_key_per_address_and_in_all() -> None:
    budget = StreamBudget(
        Settings(stream_max_connections=3, stream_max_per_key=2, stream_max_per_address=2)
    )
    first = budget.take({}, "a", "10.0.0.1")
    budget.take({}, "a", "10.0.0.2")
    with pytest.raises(StreamRefused) as key:
        budget.take({}, "a", "10.0.0.3")
    budget.take({}, "b", "10.0.0.1")
    with pytest.raises(StreamRefused) as address:
        budget.take({}, "c", "10.0.0.1")
    with pytest.raises(StreamRefused) as full:
        budget.take({})  # a console feed: the budget alone
    assert (key.value.status, address.value.status, full.value.status) == (429, 429, 503)
    first.release()
    first.release()  # once only
    assert budget.open == 2
    budget.take({}, "a", "10.0.0.1")
