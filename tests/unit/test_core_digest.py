"""The storm digest's rule: at most RATE sends to a recipient in any window, the window's last
one a digest of everything queued; the digest lists the events, their count and times."""

from __future__ import annotations

from datetime import UTC

from alarmhub.core import digest
from alarmhub.core.notifications import EMAIL, SMS

S = 1_000_000
T = 1_800_000_000 * S
W = digest.WINDOW_SECONDS * S


def test_messages_go_one_by_one_while_the_window_allows_more_than_one() -> None:
    assert digest.plan([], 1, T) == digest.ONE
    assert digest.plan([], 50, T) == digest.ONE
    assert digest.plan([T - S] * (digest.RATE - 2), 50, T) == digest.ONE


def test_the_last_send_of_a_window_is_a_digest_of_all_queued() -> None:
    nearly = [T - S] * (digest.RATE - 1)
    assert digest.plan(nearly, 2, T) == digest.DIGEST
    assert digest.plan(nearly, 1, T) == digest.ONE  # one message is sent as it is


def test_a_full_window_waits_till_its_oldest_send_leaves_it() -> None:
    sends = [T - 50 * S, T - 20 * S, T - 10 * S]
    assert len(sends) == digest.RATE
    assert digest.plan(sends, 1, T) == digest.WAIT
    assert digest.reopens_us(sends, T) == T - 50 * S + W
    assert digest.plan(sends, 1, T - 50 * S + W) != digest.WAIT
    assert digest.reopens_us(sends, T - 50 * S + W) is None
    assert digest.plan([T - W - S] * 10, 1, T) == digest.ONE  # sends gone from the window


def test_a_digest_lists_the_events_with_their_count_and_times() -> None:
    events = [digest.Collapsed(T + n * S, f"7000 BURGLARY ZONE {n}\r\nX: y") for n in range(60)]
    email = digest.render("7000", "Acme", EMAIL, events, UTC)
    assert email.subject.startswith("7000: 60 events from ")
    assert "\n" not in email.subject and "\r" not in email.body
    assert "BURGLARY ZONE 0 X: y" in email.body and "BURGLARY ZONE 49" in email.body
    assert "BURGLARY ZONE 50" not in email.body and "... and 10 more" in email.body
    assert "Acme" in email.body and "&lt;" not in email.html
    sms = digest.render("7000", "Acme", SMS, events[:2], UTC)
    assert sms.subject == "" and sms.body.splitlines()[0].startswith("7000: 2 events from ")
