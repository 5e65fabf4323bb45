"""Durable deliveries' rules, whatever the channel (webhooks, email, SMS), no I/O: how an attempt
ended and when a failed one is tried again (decisions sections 10 and 13).

An attempt is :data:`SENT`, to :data:`RETRY` (the far end may take it later: no connection, no
answer in time, SMTP 4xx, HTTP 5xx or 429) or :data:`FAILED` for good (SMTP 5xx, another HTTP
4xx): :class:`Attempt`, with a short error text. Retries: within 10 s of the first failure,
within 60 s of the second, then growing delays with jitter, for at least 24 hours in all
(:func:`retry_delay`); then the delivery has failed (:func:`next_step`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

SENT, RETRY, FAILED = "sent", "retry", "failed"
VERDICTS = (SENT, RETRY, FAILED)
RETRY_SECONDS = (2, 8, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 28800, 28800)
"""The delay before each retry (the n-th failure waits the n-th delay), before its jitter."""
JITTER = 0.25
"""Each delay is lengthened by up to this share of it, at random (never shortened: the first
two stay within 10 s and 60 s, the whole schedule at least 24 hours)."""
MAX_ATTEMPTS = len(RETRY_SECONDS) + 1
ERROR_MAX = 200


def error_text(text: str) -> str:
    """An attempt's failure as stored and shown: one line, bounded."""
    return " ".join(text.split())[:ERROR_MAX]


@dataclass(frozen=True, slots=True)
class Attempt:
    """How one attempt ended: its ``verdict`` (:data:`SENT`, :data:`RETRY`, :data:`FAILED`),
    why it did not go (one bounded line, None when sent) and the far end's answer code where
    one came (an HTTP status, an SMTP reply code)."""

    verdict: str
    error: str | None = None
    code: int | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")


def sent(code: int | None = None) -> Attempt:
    """An attempt that delivered."""
    return Attempt(SENT, None, code)


def retry(error: str, code: int | None = None) -> Attempt:
    """An attempt that failed for now (tried again on the schedule)."""
    return Attempt(RETRY, error_text(error), code)


def failed(error: str, code: int | None = None) -> Attempt:
    """An attempt that failed for good (never tried again)."""
    return Attempt(FAILED, error_text(error), code)


def http_attempt(status: int) -> Attempt:
    """An HTTP gateway's answer (decisions section 13): any 2xx sent; 5xx and 429 (too many
    requests) retried; any other answer failed for good (the request itself is wrong: bad
    number, bad credentials)."""
    if 200 <= status < 300:
        return sent(status)
    if status >= 500 or status == 429:
        return retry(f"answered HTTP {status}", status)
    return failed(f"answered HTTP {status}", status)


def smtp_attempt(code: int, message: str = "") -> Attempt:
    """An SMTP server's reply to a message (RFC 5321 4.2.1): 2xx sent, 4xx (transient: try
    again later) retried, 5xx (permanent) failed for good; anything else is not SMTP, retried."""
    text = f"SMTP {code} {message}".strip()
    if 200 <= code < 300:
        return sent(code)
    if 500 <= code < 600:
        return failed(text, code)
    return retry(text, code)


def retry_delay(failures: int, random: Callable[[], float]) -> float | None:
    """Seconds to wait after the ``failures``-th failed attempt, or None: no more attempts (the
    delivery is failed). ``random`` gives a float in [0, 1) (the jitter)."""
    if failures < 1 or failures > len(RETRY_SECONDS):
        return None
    base = RETRY_SECONDS[failures - 1]
    return base * (1 + JITTER * random())


@dataclass(frozen=True, slots=True)
class Step:
    """What becomes of a delivery after an attempt: its ``verdict`` (a retry that has no
    attempt left is :data:`FAILED`), and when to try again (a retry only)."""

    verdict: str
    retry_in_seconds: float | None


def next_step(attempt: Attempt, attempts: int, random: Callable[[], float]) -> Step:
    """What follows the ``attempts``-th attempt (counting this one) that ended as ``attempt``."""
    if attempt.verdict != RETRY:
        return Step(attempt.verdict, None)
    delay = retry_delay(attempts, random)
    if delay is None:
        return Step(FAILED, None)
    return Step(RETRY, delay)
