"""Durable deliveries' rules, every channel's: the retry schedule of decisions sections 10 and
13, how an answer (HTTP status, SMTP reply) classifies an attempt, and what follows an attempt."""

from __future__ import annotations

import itertools

import pytest

from alarmhub.core import delivery


def test_retries_within_10_s_then_60_s_then_growing_for_at_least_24_hours() -> None:
    for jitter in (0.0, 0.999999):
        delays = []
        failures = 1
        while (delay := delivery.retry_delay(failures, lambda j=jitter: j)) is not None:
            delays.append(delay)
            failures += 1
        assert delays[0] <= 10
        assert delays[1] <= 60
        assert all(b >= a for a, b in itertools.pairwise(delays[1:]))
        assert sum(delays) >= 24 * 3600
        assert failures == delivery.MAX_ATTEMPTS  # the attempt after the last delay fails it


def test_jitter_lengthens_a_delay_by_at_most_a_quarter() -> None:
    assert delivery.retry_delay(3, lambda: 0.0) == 60
    assert delivery.retry_delay(3, lambda: 0.5) == 67.5
    assert delivery.retry_delay(0, lambda: 0.0) is None


def test_error_text_is_one_bounded_line() -> None:
    assert delivery.error_text("a\nb   c" + "x" * 500) == ("a b c" + "x" * 500)[:200]


@pytest.mark.parametrize(
    ("status", "verdict"),
    [
        (200, delivery.SENT),
        (201, delivery.SENT),
        (299, delivery.SENT),
        (429, delivery.RETRY),
        (500, delivery.RETRY),
        (503, delivery.RETRY),
        (400, delivery.FAILED),
        (401, delivery.FAILED),
        (404, delivery.FAILED),
        (301, delivery.FAILED),
    ],
)
def test_an_http_gateways_answer(status: int, verdict: str) -> None:
    attempt = delivery.http_attempt(status)
    assert (attempt.verdict, attempt.code) == (verdict, status)
    assert (attempt.error is None) == (verdict == delivery.SENT)


@pytest.mark.parametrize(
    ("code", "verdict"),
    [
        (250, delivery.SENT),
        (421, delivery.RETRY),
        (450, delivery.RETRY),
        (452, delivery.RETRY),
        (550, delivery.FAILED),
        (554, delivery.FAILED),
        (999, delivery.RETRY),
    ],
)
def test_an_smtp_servers_reply(code: int, verdict: str) -> None:
    attempt = delivery.smtp_attempt(code, "mailbox\r\nunavailable")
    assert (attempt.verdict, attempt.code) == (verdict, code)
    if verdict != delivery.SENT:
        assert attempt.error == f"SMTP {code} mailbox unavailable"


def test_an_unknown_verdict_is_refused() -> None:
    with pytest.raises(ValueError, match="verdict"):
        delivery.Attempt("maybe")


def test_a_retry_waits_on_the_schedule_until_no_attempt_is_left() -> None:
    refused = delivery.retry("ConnectionRefusedError: [Errno 111]")
    first = delivery.next_step(refused, 1, lambda: 0.0)
    assert first == delivery.Step(delivery.RETRY, delivery.RETRY_SECONDS[0])
    last = delivery.next_step(refused, delivery.MAX_ATTEMPTS, lambda: 0.0)
    assert last == delivery.Step(delivery.FAILED, None)


def test_sent_and_failed_are_final_whatever_the_attempts() -> None:
    assert delivery.next_step(delivery.sent(250), 1, lambda: 0.0) == delivery.Step("sent", None)
    rejected = delivery.failed("SMTP 550 no such user", 550)
    assert delivery.next_step(rejected, 1, lambda: 0.0) == delivery.Step("failed", None)
