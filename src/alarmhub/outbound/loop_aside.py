"""An event loop that steps aside while a thread holds a lock others wait for.

A thread that runs a transaction while its process's event loop is busy (sending, say) waits
for the interpreter lock after each statement: the statement releases it, and the loop's thread
keeps it until the interpreter's switch interval (5 ms) makes it let go. A transaction of many
statements then holds SQLite's one write lock for many such waits, and every other writer of
the database (the signal writer) waits with it. :class:`LoopAside` makes the loop's thread wait
instead, only while the thread holds the lock: the loop is never held while the thread waits
*for* the lock, and never longer than ``most`` seconds.
"""

from __future__ import annotations

import asyncio
import threading

MOST_SECONDS = 0.5
"""The longest the loop steps aside for one transaction (then it goes on regardless)."""


class LoopAside:
    """Made in the loop's thread; :meth:`begin` and :meth:`end` are called in another thread,
    around the work that holds the lock (:meth:`end` whether or not :meth:`begin` was)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, most: float = MOST_SECONDS) -> None:
        self._loop = loop
        self._most = most
        self._aside = threading.Event()
        self._resume = threading.Event()

    def begin(self) -> None:
        """Have the loop's thread wait, from its next callback until :meth:`end`; returns once
        it waits (or after ``most`` seconds, or at once when the loop is closed)."""
        try:
            self._loop.call_soon_threadsafe(self._step_aside)
        except RuntimeError:  # closed: nothing to step aside
            return
        self._aside.wait(self._most)

    def end(self) -> None:
        """Let the loop go on."""
        self._resume.set()

    def _step_aside(self) -> None:
        self._aside.set()
        self._resume.wait(self._most)
