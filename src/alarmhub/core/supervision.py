"""Supervision: when a heartbeating source:destination pair, an account's periodic test and a
DC-09 account count as failed."""

from __future__ import annotations

from dataclasses import dataclass

from alarmhub.core import units

HEARTBEAT_INTERVAL_S = 20
DEFAULT_TIMEOUT_S = 60


@dataclass(slots=True)
class PairState:
    """Supervision state of one heartbeating pair."""

    source: str
    destination: str
    last_seen_us: int
    timeout_s: int = DEFAULT_TIMEOUT_S
    failed: bool = False

    def overdue(self, now_us: int) -> bool:
        """True when no heartbeat came within the pair's timeout."""
        return now_us - self.last_seen_us > units.seconds_us(self.timeout_s)


def test_overdue(last_test_us: int, interval_s: int, grace_s: int, now_us: int) -> bool:
    """True when an account's periodic test report is later than its interval plus grace."""
    return now_us - last_test_us > units.seconds_us(interval_s + grace_s)


def dc09_interval_s(own_s: int | None, default_s: int) -> int:
    """A DC-09 account's supervision interval: its own when the station set one, else the
    station's default (``dc09_supervision_seconds``); 0 means not supervised."""
    return default_s if own_s is None else own_s


def dc09_state(interval_s: int, last_message_us: int | None, failed: bool) -> str:
    """What a DC-09 account's supervision stands at: never reported, not supervised,
    communication failure or reporting."""
    if last_message_us is None:
        return "never reported"
    if interval_s == 0:
        return "not supervised"
    return "communication failure" if failed else "reporting"
