"""The event loop steps aside while a thread holds a lock (outbound.loop_aside)."""

from __future__ import annotations

import asyncio
import threading
import time

from alarmhub.outbound.loop_aside import LoopAside


def test_the_loop_runs_nothing_between_begin_and_end() -> None:
    async def main() -> tuple[list[float], float, float]:
        ticks: list[float] = []
        stop = asyncio.Event()

        async def ticker() -> None:
            while not stop.is_set():
                ticks.append(time.monotonic())
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0.02)
        aside = LoopAside(asyncio.get_running_loop())
        window: list[float] = []

        def hold() -> None:
            aside.begin()
            window.append(time.monotonic())
            time.sleep(0.1)  # the work that holds the lock
            window.append(time.monotonic())
            aside.end()

        await asyncio.to_thread(hold)
        await asyncio.sleep(0.02)
        stop.set()
        await task
        return ticks, window[0], window[1]

    ticks, began, ended = asyncio.run(main())
    assert not [t for t in ticks if began < t < ended], "the loop ran while it was to wait"
    assert [t for t in ticks if t > ended], "the loop did not go on after end()"


def test_the_loop_goes_on_after_the_most_it_waits() -> None:
    async def main() -> float:
        aside = LoopAside(asyncio.get_running_loop(), most=0.05)
        started = time.monotonic()
        threading.Thread(target=aside.begin, daemon=True).start()  # end() never called
        await asyncio.sleep(0.01)
        return time.monotonic() - started

    assert asyncio.run(main()) < 1.0


def test_begin_returns_at_once_when_the_loop_is_closed() -> None:
    loop = asyncio.new_event_loop()
    aside = LoopAside(loop, most=5.0)
    loop.close()
    started = time.monotonic()
    aside.begin()
    aside.end()
    assert time.monotonic() - started < 1.0
