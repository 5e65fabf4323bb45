"""Waiting for an event or a time (``alarmhub.wake``): a cancel that comes as the event is set
still cancels (``asyncio.wait_for`` on Python 3.11 lost it, and a stop waited for ever)."""

from __future__ import annotations

import asyncio

import pytest

from alarmhub.wake import woken


def test_an_event_set_or_a_time_passed() -> None:
    async def scenario() -> tuple[bool, bool]:
        event = asyncio.Event()
        asyncio.get_running_loop().call_later(0.01, event.set)
        return await woken(event, 5.0), await woken(asyncio.Event(), 0.01)

    assert asyncio.run(scenario()) == (True, False)


def test_a_cancel_that_comes_as_the_event_is_set_is_kept() -> None:
    async def scenario() -> None:
        for _ in range(20):
            event = asyncio.Event()
            waiting = asyncio.create_task(woken(event, 5.0))
            await asyncio.sleep(0)  # it waits
            event.set()  # the event's waiter is done; the wait resumes at the next turn
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting

    asyncio.run(scenario())
