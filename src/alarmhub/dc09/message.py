"""DC-09 messages: the header of a checked frame (``"ID"``, sequence, receiver, line, account)
and its content (data, extended data, timestamp), decrypted when the ID starts with ``*``."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from functools import lru_cache
from typing import NamedTuple

from alarmhub.dc09 import crypto
from alarmhub.dc09.frame import new

ADM_CID = "ADM-CID"
SIA_DCS = "SIA-DCS"
NULL = "NULL"
TYPES = frozenset({ADM_CID, SIA_DCS, NULL})
ACCOUNT_MAX = 16

_HEADER = re.compile(
    rb'"(\*?)([^"*]{1,32})"(\d{4})(R[0-9A-Fa-f]{0,6})?(L[0-9A-Fa-f]{0,6})?(?:#([0-9A-Za-z]{1,16}))?\['
)
_CONTENT = re.compile(rb"([^\[\]]*)\]((?:\[[^\[\]]*\])*)(?:_(\d\d:\d\d:\d\d,\d\d-\d\d-\d{4}))?")


class Message(NamedTuple):
    """The header of a frame whose CRC and length are right."""

    id: str  # ADM-CID, SIA-DCS, NULL, or whatever else was sent
    encrypted: bool
    sequence: str  # four digits, as sent
    receiver: str | None  # the R field as sent ("R", "R0", "RF3"), None when absent
    line: str | None  # the L field as sent
    account: str  # the header account, upper case; "" when absent
    payload: bytes  # what follows the '[': text, or the cipher text in hex
    receiver_number: str  # hex, upper case, no leading zeros; "0" when absent or empty
    line_number: str


@lru_cache(maxsize=1024)
def _field(field: bytes | None) -> tuple[str | None, str]:
    """An R or L field as sent, and its number (see :class:`Message`)."""
    if field is None:
        return None, "0"
    return field.decode("ascii"), field[1:].upper().lstrip(b"0").decode("ascii") or "0"


@lru_cache(maxsize=256)
def _kind(kind: bytes) -> str:
    return kind.decode("ascii", "replace")


class Content(NamedTuple):
    """What a message carries: the data block, extended data blocks and the timestamp."""

    data: str
    xdata: tuple[str, ...] = ()
    timestamp: datetime | None = None


def parse(body: bytes) -> Message | None:
    """The header of ``body`` (from the first ``"`` to before the CR); None when malformed."""
    match = _HEADER.match(body)
    if match is None:
        return None
    star, kind, sequence, receiver, line, account = match.groups()
    receiver_text, receiver_number = _field(receiver)
    line_text, line_number = _field(line)
    return new(
        Message,
        (
            _kind(kind),
            star == b"*",
            sequence.decode("ascii"),
            receiver_text,
            line_text,
            account.decode("ascii").upper() if account is not None else "",
            body[match.end() :],
            receiver_number,
            line_number,
        ),
    )


@lru_cache(maxsize=64)  # a panel's timestamps are now: many messages share each second
def _time(stamp: bytes) -> datetime | None:
    """The time of a timestamp's digits ``HH:MM:SS,MM-DD-YYYY`` (UTC); None when not a real
    time."""
    try:
        return datetime(
            int(stamp[15:19]),
            int(stamp[9:11]),
            int(stamp[12:14]),
            int(stamp[0:2]),
            int(stamp[3:5]),
            int(stamp[6:8]),
            tzinfo=UTC,
        )
    except ValueError:
        return None


def content(text: bytes) -> Content | None:
    """The content of plain text ``data][xdata]..._HH:MM:SS,MM-DD-YYYY``; None when malformed
    (also when the timestamp is not a real time)."""
    match = _CONTENT.fullmatch(text)
    if match is None:
        return None
    data, xdata, stamp = match.groups()
    timestamp = None
    if stamp is not None:
        timestamp = _time(stamp)
        if timestamp is None:
            return None
    blocks = tuple(x.decode("ascii", "replace") for x in xdata[1:-1].split(b"][")) if xdata else ()
    try:
        return new(Content, (data.decode("ascii"), blocks, timestamp))
    except UnicodeDecodeError:
        return None


def decrypted_content(message: Message, key: bytes) -> Content | None:
    """The content of an encrypted message, decrypted; None when it does not decrypt to a
    well-formed content (a wrong key). The padding stands where the unencrypted data block has
    its ``#account``, and ends at the first ``|``; a block with no ``|`` (an encrypted NULL)
    has padding only."""
    plain = crypto.decrypt(key, message.payload)
    if plain is None:
        return None
    bar, bracket = plain.find(b"|"), plain.find(b"]")
    if bracket < 0:
        return None
    rest = plain[bar + 1 :] if 0 <= bar < bracket else plain[bracket:]
    return content(rest)


def timestamp_text(moment: datetime) -> str:
    """A DC-09 timestamp: ``_HH:MM:SS,MM-DD-YYYY`` in UTC."""
    t = moment.astimezone(UTC)
    return f"_{t.hour:02d}:{t.minute:02d}:{t.second:02d},{t.month:02d}-{t.day:02d}-{t.year:04d}"


@lru_cache(maxsize=2)
def _timestamp_text_of(second: int) -> str:
    return timestamp_text(datetime.fromtimestamp(second, UTC))


def timestamp_now() -> str:
    """The current time as :func:`timestamp_text` (worked out once a second)."""
    return _timestamp_text_of(int(time.time()))
