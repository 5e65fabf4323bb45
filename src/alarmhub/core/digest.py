"""The storm digest (issue 38): nobody is flooded. A recipient (one contact by one channel: a
lane) is sent at most :data:`RATE` messages in any :data:`WINDOW_SECONDS`. Its messages go one
by one while the window allows more than one; the window's last send is ONE digest of every
message then queued (when more than one is), listing the events (how many, the first and the
last time); messages queued while the window is full wait till it allows one more. No I/O: the
store applies it when it takes a lane's next send (:mod:`alarmhub.store.notification_sending`).

Each message a digest carries is marked sent (or failed) with it, naming the digest, so that
the log accounts for every event.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo

from alarmhub.core import units
from alarmhub.core.notifications import EMAIL, SUBJECT_MAX, Message, local_time, text_safe

RATE = 3
"""Messages to one recipient by one channel in any window, at most (a digest is one of them)."""
WINDOW_SECONDS = 60
DIGEST_MAX = 500
"""Messages one digest carries at most (the rest go in the next one)."""
LISTED_MAX = 50
"""Events a digest lists one by one (the rest are counted)."""
KIND = "digest"
"""The kind of a digest message in the log."""

ONE, DIGEST, WAIT = "one", "digest", "wait"


def window_us() -> int:
    return units.seconds_us(WINDOW_SECONDS)


def recent(sent_us: Sequence[int], now_us: int) -> list[int]:
    """The times of the sends (each a message or a digest) that are in the window, oldest
    first."""
    return sorted(t for t in sent_us if t > now_us - window_us())


def reopens_us(sent_us: Sequence[int], now_us: int) -> int | None:
    """When the window allows one more message to the recipient that was sent at ``sent_us``
    (None: it does now)."""
    inside = recent(sent_us, now_us)
    if len(inside) < RATE:
        return None
    return inside[-RATE] + window_us()


def plan(sent_us: Sequence[int], queued: int, now_us: int) -> str:
    """What a recipient's next send is, with ``queued`` messages waiting for it (its first
    one due) and sends at ``sent_us``: :data:`ONE` (the first message as it is),
    :data:`DIGEST` (all of them in one: the window's last send) or :data:`WAIT` (till
    :func:`reopens_us`)."""
    allowed = RATE - len(recent(sent_us, now_us))
    if allowed <= 0:
        return WAIT
    return DIGEST if allowed == 1 and queued > 1 else ONE


@dataclass(frozen=True, slots=True)
class Collapsed:
    """A message a digest carries: when it was queued, and its line (the e-mail's subject, the
    SMS's text)."""

    at_us: int
    line: str


def render(
    account: str, name: str, channel: str, messages: Sequence[Collapsed], zone: tzinfo
) -> Message:
    """The digest of ``messages`` (oldest first) of ``account`` by ``channel``: the count and
    the first and last times in the subject (e-mail) or the text's first line (SMS), then the
    events, one a line (the first :data:`LISTED_MAX`; the rest counted)."""
    first, last = local_time(messages[0].at_us, zone), local_time(messages[-1].at_us, zone)
    n = len(messages)
    head = f"{text_safe(account)}: {n} events from {first} to {last}"
    lines = [f"{local_time(m.at_us, zone)}  {text_safe(m.line)}" for m in messages[:LISTED_MAX]]
    if n > LISTED_MAX:
        lines.append(f"... and {n - LISTED_MAX} more")
    if channel == EMAIL:
        about = f"Account: {text_safe(account)} {text_safe(name)}".rstrip()
        body = "\n".join([f"{n} events, too many to send one by one:", "", *lines, "", about])
        page = "<html><body><p>" + html.escape(body).replace("\n", "<br>\n") + "</p></body></html>"
        return Message(head[:SUBJECT_MAX], body, page)
    return Message("", "\n".join([head, *lines]), "")
