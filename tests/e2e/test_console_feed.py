"""The console feed's wake-ups: on PostgreSQL a change of the queues made through any
connection (another node's, the CLI's) wakes the feed by notification, not by its next poll."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from alarmhub.console.feed import LiveFeed
from alarmhub.store import queries
from alarmhub.store.engine import open_engine, upgrade, write_transaction
from alarmhub.store.provisioning import PROVISIONING, bump_revision
from tests.support.database import database_url

pytestmark = pytest.mark.backends("postgresql")  # notifications are PostgreSQL's


async def woken(feed: LiveFeed, seconds: float = 30.0) -> bool:
    """Whether the feed's wake-up event is set within ``seconds`` (only a notification sets it:
    the feed's own polling never does)."""
    try:
        await asyncio.wait_for(feed._changed.wait(), seconds)
    except TimeoutError:
        return False
    return True


def test_a_queue_change_on_another_connection_wakes_the_feed(tmp_path: Path) -> None:
    engine = open_engine(database_url(tmp_path))
    upgrade(engine)

    async def scenario() -> tuple[bool, bool, bool]:
        feed = LiveFeed(engine, poll_seconds=3600)  # polling alone would not look for an hour
        feed._run = lambda: asyncio.sleep(3600)  # type: ignore[method-assign]  # no consumer
        await feed.start()
        try:
            await woken(feed)  # set once when the listener starts (a catch-up look)
            while not feed.listening:
                await asyncio.sleep(0.01)
            feed._changed.clear()

            def bump(name: str) -> None:
                with write_transaction(engine) as conn:
                    bump_revision(conn, name)

            await asyncio.to_thread(bump, PROVISIONING)  # another revision: no wake-up
            quiet = not await woken(feed, 1.0)
            await asyncio.to_thread(bump, queries.QUEUE)
            return quiet, await woken(feed), feed.listening
        finally:
            await feed.stop()

    try:
        quiet, woke, listening = asyncio.run(scenario())
    finally:
        engine.dispose()
    assert quiet, "a provisioning change woke the queue feed"
    assert woke, "the queue change's notification never reached the feed"
    assert listening
