"""What the receiver does with one frame, and what a DC-09 event is stored as. No I/O.

:func:`decide` checks a frame in the order of ``docs/dc09.md`` and says how to answer: not at
all (bad CRC or length), DUH (cannot process), NAK (stale timestamp; the server NAKs too when the
events cannot be stored), or ACK once its events are stored. :func:`signals` turns the events
into the signals that the writer commits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import NamedTuple

from alarmhub.core.dc09 import DESTINATION, TOKEN_NAME, line_name
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.dc09 import answer, events, message
from alarmhub.dc09.frame import RawFrame, new
from alarmhub.dc09.message import Content, Message

UNMAPPED_DNIS = "0"  # all zeros is never a registered dnis: the router raises UNKNOWN ACCOUNT
PANEL_MAX = 10
TOO_OLD = timedelta(seconds=40)
TOO_NEW = timedelta(seconds=20)


class Reply(StrEnum):
    """How a frame is answered (the bytes of each answer: :mod:`alarmhub.dc09.answer`)."""

    ACK = "ACK"  # after its events are committed (at once for a link test)
    NAK = "NAK"  # an encrypted message's timestamp is outside -40 s / +20 s
    DUH = "DUH"  # well-formed, but it cannot be processed
    IGNORED = "none"  # bad CRC or length: no answer


class Decision(NamedTuple):
    """The reply to one frame and what it needs: the message, its content and events, the
    panel they come from, the key for an encrypted ACK, or the answer to send at once."""

    reply: Reply
    reason: str = ""
    message: Message | None = None
    content: Content | None = None
    events: tuple[events.Event, ...] = ()
    panel: str = ""
    key: bytes | None = None
    answer: bytes | None = None
    unknown_codes: tuple[str, ...] = ()

    def ack(self, now: datetime | None = None) -> bytes:
        """The ACK, with the receiver's time ``now`` when encrypted (None: the current time)."""
        assert self.message is not None
        return answer.ack(self.message, self.key, now)


_IGNORED = Decision(Reply.IGNORED, "bad CRC or length")


def _duh(reason: str, msg: Message | None) -> Decision:
    return Decision(Reply.DUH, reason, msg, answer=answer.duh(msg))


def decide(
    raw: RawFrame, key_of: Callable[[str], bytes | None], now: datetime | None = None
) -> Decision:
    """The decision on ``raw``; ``key_of`` gives an account's AES key (None: it has none),
    ``now`` is the receiver's time (None: the current time, read when it is needed)."""
    if not raw.valid():
        return _IGNORED
    msg = message.parse(raw.body)
    if msg is None:
        return _duh("malformed header", None)
    if msg.id not in message.TYPES:
        return _duh(f"unknown message type {msg.id!r}", msg)
    key = key_of(msg.account) if msg.account else None
    if msg.encrypted:
        if key is None:
            return _duh("no key for this account", msg)
        content = message.decrypted_content(msg, key)
        # an encrypted message carries a timestamp; one without is a wrong key's noise that
        # happened to end in a bare "]" (about one in 300 of them)
        if content is None or content.timestamp is None:
            return _duh("does not decrypt with the account's key", msg)
        stamp = content.timestamp
        if now is None:
            now = datetime.now(UTC)
        if not (now - TOO_OLD <= stamp <= now + TOO_NEW):
            return Decision(Reply.NAK, "timestamp out of window", msg, answer=answer.nak(now))
    else:
        if key is not None:
            return _duh("the account is keyed: unencrypted messages are refused", msg)
        content = message.content(msg.payload)
        if content is None:
            return _duh("malformed content", msg)
    if msg.id == message.NULL:
        return Decision(Reply.ACK, "link test", msg, content, key=key)
    parsed = (
        events.adm_cid(content.data) if msg.id == message.ADM_CID else events.sia_dcs(content.data)
    )
    if isinstance(parsed, str):
        return _duh(parsed, msg)
    panel = parsed.account or msg.account
    if msg.encrypted and panel != msg.account:
        return _duh("the data block names another account than the header", msg)
    if not msg.encrypted and panel != msg.account and key_of(panel) is not None:
        return _duh("the data block names a keyed account: unencrypted messages are refused", msg)
    if parsed.events and not 0 < len(panel) <= PANEL_MAX:
        return _duh(f"account {panel!r} is not 1-{PANEL_MAX} characters", msg)
    reason = "event" if parsed.events else "link test"
    return new(
        Decision, (Reply.ACK, reason, msg, content, parsed.events, panel, key, None, parsed.unknown)
    )


def source(msg: Message) -> str:
    """The ``source`` of a DC-09 signal: its receiver and line, ``R0L0`` when it names none."""
    return _line_name(msg.receiver_number, msg.line_number)


_line_name = lru_cache(maxsize=1024)(line_name)


def _retry_key_parts(decision: Decision, origin: str) -> tuple[str, str]:
    msg, content = decision.message, decision.content
    assert msg is not None and content is not None
    said = "\x1f".join((msg.id, content.data, *content.xdata)).encode("ascii", "replace")
    account = msg.account or decision.panel
    return f"{account}/{origin}/{msg.sequence}/", hashlib.sha256(said).hexdigest()[:16]


def retry_key(decision: Decision, index: int) -> str:
    """The key under which an event is remembered for the retry window: account, receiver,
    line, sequence number, the event's place in the frame and a digest of what the message
    says (so a new message that reuses a sequence number is never taken for a retry)."""
    assert decision.message is not None
    start, digest = _retry_key_parts(decision, source(decision.message))
    return f"{start}{index}/{digest}"


def signals(decision: Decision, dnis: str | None, received_us: int) -> list[Signal]:
    """The signals of an accepted frame's events; ``dnis`` is its line's (None: unmapped)."""
    msg = decision.message
    assert msg is not None
    origin = source(msg)
    dnis = dnis or UNMAPPED_DNIS
    panel = decision.panel
    start, digest = _retry_key_parts(decision, origin)  # of retry_key
    result = []
    for i, (code, area, zone) in enumerate(decision.events):  # mostly one
        fields = new(SignalFields, (dnis, panel, code, area, zone))
        key = f"{start}{i}/{digest}"
        result.append(new(Signal, (origin, DESTINATION, fields, TOKEN_NAME, received_us, key)))
    return result
