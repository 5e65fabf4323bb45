"""DC-09 messages: the header of a checked frame (``"ID"``, sequence, receiver, line, account)
and its content (data, extended data, timestamp), decrypted when the ID starts with ``*``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from alarmhub.dc09 import crypto

ADM_CID = "ADM-CID"
SIA_DCS = "SIA-DCS"
NULL = "NULL"
TYPES = frozenset({ADM_CID, SIA_DCS, NULL})
ACCOUNT_MAX = 16

_HEADER = re.compile(
    rb'"(\*?)([^"*]{1,32})"(\d{4})(R[0-9A-Fa-f]{0,6})?(L[0-9A-Fa-f]{0,6})?(?:#([0-9A-Za-z]{1,16}))?\['
)
_CONTENT = re.compile(
    rb"([^\[\]]*)\]((?:\[[^\[\]]*\])*)(?:_(\d\d):(\d\d):(\d\d),(\d\d)-(\d\d)-(\d{4}))?"
)


@dataclass(frozen=True, slots=True)
class Message:
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


def _number(field: bytes | None) -> str:
    digits = (field or b"")[1:].upper().lstrip(b"0")
    return digits.decode("ascii") or "0"


@dataclass(frozen=True, slots=True)
class Content:
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
    return Message(
        id=kind.decode("ascii", "replace"),
        encrypted=bool(star),
        sequence=sequence.decode("ascii"),
        receiver=receiver.decode("ascii") if receiver is not None else None,
        line=line.decode("ascii") if line is not None else None,
        account=account.decode("ascii").upper() if account is not None else "",
        payload=body[match.end() :],
        receiver_number=_number(receiver),
        line_number=_number(line),
    )


def content(text: bytes) -> Content | None:
    """The content of plain text ``data][xdata]..._HH:MM:SS,MM-DD-YYYY``; None when malformed
    (also when the timestamp is not a real time)."""
    match = _CONTENT.fullmatch(text)
    if match is None:
        return None
    data, xdata, *stamp = match.groups()
    timestamp = None
    if stamp[0] is not None:
        hour, minute, second, month, day, year = (int(x) for x in stamp)
        try:
            timestamp = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:
            return None
    blocks = tuple(x.decode("ascii", "replace") for x in xdata[1:-1].split(b"][")) if xdata else ()
    try:
        return Content(data.decode("ascii"), blocks, timestamp)
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
    return moment.astimezone(UTC).strftime("_%H:%M:%S,%m-%d-%Y")
