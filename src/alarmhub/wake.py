"""Waiting for an :class:`asyncio.Event` or a time, whichever comes first, in the loops of the
node's long-running tasks (delivery turns, link supervision, the consoles' feeds and streams).

``asyncio.wait_for`` on Python 3.11 can lose a cancellation that arrives just as the event is
set: it returns, and the loop of a task being stopped goes on for ever, so the stop that
waits for it never ends (seen in a delivery worker's stop). ``asyncio.timeout`` keeps it.
"""

from __future__ import annotations

import asyncio


async def woken(event: asyncio.Event, seconds: float) -> bool:
    """Wait until ``event`` is set or ``seconds`` have passed; whether it was set."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
