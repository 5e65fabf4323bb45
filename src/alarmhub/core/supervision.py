"""Heartbeat supervision: when a source:destination pair counts as failed."""

from __future__ import annotations

from dataclasses import dataclass

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
        return now_us - self.last_seen_us > self.timeout_s * 1_000_000


def test_overdue(last_test_us: int, interval_s: int, grace_s: int, now_us: int) -> bool:
    """True when an account's periodic test report is later than its interval plus grace."""
    return now_us - last_test_us > (interval_s + grace_s) * 1_000_000
