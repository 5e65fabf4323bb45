"""DC-09 answers: ACK (encrypted when the message was), NAK with the receiver's time, DUH."""

from __future__ import annotations

from datetime import datetime

from alarmhub.dc09 import crypto
from alarmhub.dc09.frame import crc16
from alarmhub.dc09.message import Message, timestamp_now, timestamp_text

ACK = "ACK"
NAK = "NAK"
DUH = "DUH"


def frame(body: bytes) -> bytes:
    """``body`` framed: LF, CRC and length in hex, body, CR."""
    return b"\n%04X%04X%s\r" % (crc16(body), len(body), body)


def _head(kind: str, message: Message, encrypted: bool = False) -> bytes:
    """``"ACK"seqRrcvrLline#acct[`` with the message's own fields, as it sent them."""
    star = "*" if encrypted else ""
    receiver = message.receiver or ""
    line = message.line or ""
    account = f"#{message.account}" if message.account else ""
    return f'"{star}{kind}"{message.sequence}{receiver}{line}{account}['.encode("ascii")


def ack(message: Message, key: bytes | None, now: datetime | None = None) -> bytes:
    """The acknowledgement of ``message``; encrypted with ``key`` when the message was, with
    the receiver's time ``now`` (None: the current time) inside."""
    if message.encrypted and key is not None:
        stamp = timestamp_text(now) if now is not None else timestamp_now()
        secret = crypto.encrypt(key, b"]" + stamp.encode("ascii"))
        return frame(_head(ACK, message, encrypted=True) + secret)
    return frame(_head(ACK, message) + b"]")


def duh(message: Message | None) -> bytes:
    """The answer to a frame the receiver cannot process; never encrypted."""
    if message is None:
        return frame(b'"DUH"0000R0L0#0[]')
    return frame(_head(DUH, message) + b"]")


def nak(now: datetime) -> bytes:
    """The answer to a message whose timestamp is out of the window: the receiver's time, so
    that the panel can set its clock (DC-09's fixed form, never encrypted)."""
    return frame(b'"NAK"0000R0L0A0[]' + timestamp_text(now).encode("ascii"))
