"""The rules of a link to a hardware receiver's automation output: its settings and what each
may be (decisions section 11), the receiver and line numbers its lines map, and the source and
destination its signals are stored under. No I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from alarmhub.core.dc09 import line_name

PROTOCOLS = ("surgard", "ademco685", "d6500")
TRANSPORTS = ("listen", "connect", "serial")
LISTEN, CONNECT, SERIAL = TRANSPORTS
STATES = ("idle", "up", "failed")
IDLE, UP, FAILED = STATES
BAUDS = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200)
FRAMINGS = ("8N1", "7E1")
DEFAULT_BAUD = 9600
DEFAULT_FRAMING = "8N1"
LINE_DIGITS = (1, 2, 3)
DEFAULT_LINE_DIGITS = 1  # the MLR2's header; System I-5 headers use 3
HEARTBEAT_TIMEOUT_MIN_S = 10
HEARTBEAT_TIMEOUT_MAX_S = 3600
DEFAULT_HEARTBEAT_TIMEOUT_S = 90
ADDRESS_MAX = 255
RECEIVER_MAX = 99  # two digits in every frame header
LINE_MAX = 999  # up to three digits
DESTINATION = "receiver"  # of every signal a link stores
TOKEN_NAME = "(receiver)"  # noqa: S105 (a name, not a secret) no token can have this name
SOURCE_MAX = 64  # a signal's source: a link's name (32) and its receiver line fit
_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
_NUMBER = re.compile(r"[0-9]{1,4}")


@dataclass(frozen=True, slots=True)
class LinkSettings:
    """One link as provisioned: ``address`` is HOST:PORT, or the serial device; ``baud`` and
    ``framing`` are the serial port's (None on TCP)."""

    name: str
    protocol: str
    transport: str
    address: str
    baud: int | None = None
    framing: str | None = None
    line_digits: int = DEFAULT_LINE_DIGITS
    heartbeat_timeout_s: int = DEFAULT_HEARTBEAT_TIMEOUT_S
    changed_us: int = 0


def name_problem(name: str) -> str | None:
    if not _NAME.fullmatch(name):
        return f"invalid link name {name!r}: must be 1-32 letters, digits, '-' or '_'"
    return None


def link_problem(link: LinkSettings) -> str | None:
    """Why ``link`` cannot be provisioned, or None when it can (the HOST:PORT of a TCP link
    is parsed where it is given)."""
    problem = name_problem(link.name)
    if problem:
        return problem
    if link.protocol not in PROTOCOLS:
        return f"invalid protocol {link.protocol!r}: must be one of {', '.join(PROTOCOLS)}"
    if link.transport not in TRANSPORTS:
        return f"invalid transport {link.transport!r}: must be one of {', '.join(TRANSPORTS)}"
    if not link.address or len(link.address) > ADDRESS_MAX or not link.address.isprintable():
        return f"invalid address {link.address!r}: must be 1-{ADDRESS_MAX} printable characters"
    if link.transport == SERIAL:
        if link.baud not in BAUDS:
            return f"invalid baud {link.baud}: must be one of {', '.join(map(str, BAUDS))}"
        if link.framing not in FRAMINGS:
            return f"invalid framing {link.framing!r}: must be one of {', '.join(FRAMINGS)}"
    elif link.baud is not None or link.framing is not None:
        return "baud and framing are for serial links only"
    if link.line_digits not in LINE_DIGITS:
        return f"invalid line digits {link.line_digits}: must be 1-3"
    if not HEARTBEAT_TIMEOUT_MIN_S <= link.heartbeat_timeout_s <= HEARTBEAT_TIMEOUT_MAX_S:
        return (
            f"invalid heartbeat timeout {link.heartbeat_timeout_s}: must be "
            f"{HEARTBEAT_TIMEOUT_MIN_S}-{HEARTBEAT_TIMEOUT_MAX_S} seconds"
        )
    return None


def line_number(value: str | int, what: str) -> int:
    """A frame's receiver (``what`` "receiver") or line number as a number (``01`` is 1);
    ValueError saying why when it is not one."""
    most = RECEIVER_MAX if what == "receiver" else LINE_MAX
    text = str(value)
    if not _NUMBER.fullmatch(text) or int(text) > most:
        raise ValueError(f"invalid {what} {text!r}: must be a number from 0 to {most}")
    return int(text)


def source(link: str, receiver: str, line: str) -> str:
    """The ``source`` of a link's signal: the link and its receiver line, ``NAME R1L1``
    (numbers as numbers: ``01`` is 1; ``R0L0`` when the frame names none)."""
    return f"{link} {line_name(_number(receiver), _number(line))}"[:SOURCE_MAX]


def _number(digits: str) -> int | str:
    return int(digits) if digits.isascii() and digits.isdigit() else digits or 0
