"""Runaway signals: an account that sends more than N signals within M minutes.

The signal that exceeds the limit raises one RUNAWAY alarm; from then on the account's signals
go to history only, until it has been quiet for M minutes.

Memory: each account's window holds the times of its signals of the last M minutes, at most N+1
of them (it is emptied when the account turns runaway), and an account quiet for M minutes is
dropped (:meth:`RunawayMonitor.forget_quiet`). With the default limit that is a few hundred
bytes an account; with a limit set too high to be reached (a load test's), every signal of the
last M minutes is held, about 45 bytes each (measured: 100,000 signals in the window, 4.4 MB),
so the windows fill for the first M minutes of a steady load and then stay at rate x M signals.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from alarmhub.core import units

DEFAULT_LIMIT = 10
DEFAULT_MINUTES = 2


class RunawayVerdict(Enum):
    NORMAL = "normal"
    TRIGGERED = "triggered"
    SUPPRESSED = "suppressed"


@dataclass(slots=True)
class _Account:
    times: deque[int] = field(default_factory=deque)
    runaway: bool = False
    last_us: int = 0


class RunawayMonitor:
    """Counts each account's signals in a sliding window."""

    def __init__(self, limit: int = DEFAULT_LIMIT, minutes: int = DEFAULT_MINUTES) -> None:
        if limit < 1 or minutes < 1:
            raise ValueError("runaway limit and minutes must be positive")
        self.limit = limit
        self.minutes = minutes
        self._window_us = units.minutes_us(minutes)
        self._accounts: dict[str, _Account] = {}

    @property
    def text(self) -> str:
        """What the RUNAWAY alarm says: ``10 SIGS IN 2 MIN``."""
        return f"{self.limit} SIGS IN {self.minutes} MIN"

    def observe(self, account: str, at_us: int) -> RunawayVerdict:
        """Count one signal of ``account`` received at ``at_us`` and say how to route it."""
        state = self._accounts.get(account)
        if state is None:
            state = self._accounts[account] = _Account()
        if state.runaway:
            if at_us - state.last_us >= self._window_us:
                state.runaway = False  # quiet for M minutes: the account is back to normal
                state.times.clear()
            else:
                state.last_us = at_us
                return RunawayVerdict.SUPPRESSED
        times = state.times
        times.append(at_us)
        while times and at_us - times[0] >= self._window_us:
            times.popleft()
        state.last_us = at_us
        if len(times) > self.limit:
            state.runaway = True
            times.clear()
            return RunawayVerdict.TRIGGERED
        return RunawayVerdict.NORMAL

    def forget_quiet(self, now_us: int) -> None:
        """Drop accounts that have been quiet for the whole window (bounded memory)."""
        quiet = [a for a, s in self._accounts.items() if now_us - s.last_us >= self._window_us]
        for account in quiet:
            del self._accounts[account]
