"""The rules of an automation output (decisions section 12): alarmhub sends what it stored to
another automation system as a Sur-Gard receiver does. An output's settings and what each may
be, the accounts it forwards, its frames, what its sender reports, and the Contact ID events
alarmhub sends for what it knows itself of an account. No I/O.

What alarmhub knows itself of an account goes out as the Contact ID event a receiver would send
(:data:`OWN_EVENTS`; area ``00``, zone ``000``):

- a supervised DC-09 account's COMMUNICATION FAILURE: ``E350`` (Communication Trouble: the
  system has difficulties communicating with the central station), its restoral ``R350``;
  the panel is the DC-09 account, the account the DC-09 line's mask gives it;
- FAIL TO TEST: ``E358`` (Periodic Comm Test Fail: a periodic communication path test
  failed), for the panel the account's last signal came from (the account number when it
  has none). Its end is the account's test report itself, forwarded as it came: no ``R358``
  is made up;
- a signal of an unknown account (no dnis, a panel that does not fit the mask, an account not
  provisioned) is forwarded as received, like any other signal: the UNKNOWN ACCOUNT alarm it
  raises at the station is not sent.

An output with ``accounts`` forwards only the signals and events whose account (the one its
dnis's line mask gives the panel, provisioned or not) starts with one of them; a signal whose
panel no mask turns into an account goes only to the outputs without ``accounts``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

from alarmhub.core.account import account_number_problem
from alarmhub.core.receiver_links import (
    BAUDS,
    FRAMINGS,
    LINE_DIGITS,
    LINE_MAX,
    RECEIVER_MAX,
)
from alarmhub.core.surgard import contact_id_frame, link_test_frame

PROTOCOLS = ("surgard",)
TRANSPORTS = ("connect", "listen", "serial")
CONNECT, LISTEN, SERIAL = TRANSPORTS
STATES = ("up", "down", "failed", "idle")
UP, DOWN, FAILED, IDLE = STATES
RECEIVER_DEFAULT = 1  # RR
LINE_DEFAULT = 1  # L
LINE_DIGITS_DEFAULT = 1
ACK_TIMEOUT_SECONDS = 4.0
ACK_TIMEOUT_MIN_SECONDS, ACK_TIMEOUT_MAX_SECONDS = 0.001, 3600.0  # kept in milliseconds
TRIES_PER_ADDRESS = 4  # after the 4th try: the next address, the frame kept
HEARTBEAT_SECONDS = 30
HEARTBEAT_MAX_SECONDS = 86400
FAILURE_SECONDS = 60
LEASE_SECONDS = 10.0
RENEW_SECONDS = 2.0
RETENTION_HOURS_DEFAULT = 24  # frames queued longer are kept and counted as "stale"
NAME_MAX = 40
ADDRESS_MAX = 255
BACKUPS_MAX = 8  # backup addresses of a connect output
ACCOUNTS_MAX = 100  # account prefixes of one output
CHANNEL = "output"  # its lane in delivery_lane (store.lanes)
OWN_AREA, OWN_ZONE = "00", "000"
COMMUNICATION_FAILED, COMMUNICATION_RESTORED, TEST_FAILED = "E350", "R350", "E358"
OWN_EVENTS = {
    "communication failure": COMMUNICATION_FAILED,
    "communication restored": COMMUNICATION_RESTORED,
    "fail to test": TEST_FAILED,
}
"""What alarmhub knows itself of an account, and the Contact ID event sent for it."""
_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{NAME_MAX}}}")


@dataclass(frozen=True)
class OutputSettings:
    """One output as provisioned. ``addresses``: connect: the primary then the backups
    (HOST:PORT); listen: one HOST:PORT; serial: (DEVICE,). ``accounts``: prefixes, () for
    every account. ``output_id`` is 0 before the output is stored."""

    output_id: int
    name: str
    protocol: str
    transport: str
    addresses: tuple[str, ...]
    baud: int | None
    framing: str | None
    accounts: tuple[str, ...]
    receiver: int
    line: int
    line_digits: int
    ack_timeout_seconds: float
    heartbeat_seconds: int

    def link_test(self) -> bytes:
        """The link test the output sends when idle."""
        return link_test_frame(self.receiver, self.line, self.line_digits)


@dataclass(frozen=True)
class OutputReport:
    """What the node sending an output says of it: ``state`` up, down, failed or idle; the
    address it sends to; its frames sent, sent again, ACKed, NAKed and unanswered;
    ``failing_since_us`` when it last began to fail to deliver (None while delivering)."""

    state: str
    address: str | None
    sent: int
    resent: int
    acks: int
    naks: int
    timeouts: int
    last_sent_us: int | None
    last_delivered_us: int | None
    failing_since_us: int | None
    node: str


class QueuedFrame(NamedTuple):
    """A frame waiting to be ACKed downstream, as the sender reads it."""

    frame_id: int
    frame: bytes
    queued_us: int


def name_problem(name: str) -> str | None:
    if not _NAME.fullmatch(name):
        return f"invalid output name {name!r}: must be 1-{NAME_MAX} letters, digits, '-' or '_'"
    return None


def host_port_problem(value: str) -> str | None:
    """Why ``value`` is not HOST:PORT (``[v6]:PORT`` for IPv6, a port from 1 to 65535)."""
    host, sep, port = value.rpartition(":")
    if (
        not sep
        or not host.strip("[]")
        or not (port.isascii() and port.isdigit() and 0 < int(port) <= 65535)
        or len(value) > ADDRESS_MAX
        or not value.isprintable()
        or " " in value
    ):
        return f"invalid address {value!r}: must be HOST:PORT with a port from 1 to 65535"
    return None


def prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot start an account number (what an account number may hold)."""
    problem = account_number_problem(prefix)
    return f"invalid account prefix {prefix!r}: {problem}" if problem else None


def output_problem(s: OutputSettings) -> str | None:
    """Why ``s`` cannot be provisioned, or None when it can."""
    problem = name_problem(s.name)
    if problem:
        return problem
    if s.protocol not in PROTOCOLS:
        return f"invalid protocol {s.protocol!r}: must be one of {', '.join(PROTOCOLS)}"
    if s.transport not in TRANSPORTS:
        return f"invalid transport {s.transport!r}: must be one of {', '.join(TRANSPORTS)}"
    problem = _addresses_problem(s)
    if problem:
        return problem
    if len(s.accounts) > ACCOUNTS_MAX:
        return f"at most {ACCOUNTS_MAX} account prefixes"
    for prefix in s.accounts:
        problem = prefix_problem(prefix)
        if problem:
            return problem
    if not 0 <= s.receiver <= RECEIVER_MAX:
        return f"invalid receiver {s.receiver}: must be a number from 0 to {RECEIVER_MAX}"
    if s.line_digits not in LINE_DIGITS:
        return f"invalid line digits {s.line_digits}: must be 1-3"
    if not 0 <= s.line <= min(LINE_MAX, 10**s.line_digits - 1):
        return f"invalid line {s.line}: does not fit {s.line_digits} digit(s)"
    ack = s.ack_timeout_seconds
    if not (math.isfinite(ack) and ACK_TIMEOUT_MIN_SECONDS <= ack <= ACK_TIMEOUT_MAX_SECONDS):
        return (
            f"invalid ack timeout {ack:g}: must be more than 0 seconds (from "
            f"{ACK_TIMEOUT_MIN_SECONDS:g} to {ACK_TIMEOUT_MAX_SECONDS:g})"
        )
    if not 1 <= s.heartbeat_seconds <= HEARTBEAT_MAX_SECONDS:
        return (
            f"invalid heartbeat {s.heartbeat_seconds}: must be 1 to {HEARTBEAT_MAX_SECONDS} seconds"
        )
    return None


def _addresses_problem(s: OutputSettings) -> str | None:
    if not s.addresses:
        return "an output needs an address"
    if s.transport == SERIAL:
        device = s.addresses[0]
        if len(s.addresses) != 1:
            return "a serial output has one device"
        if len(device) > ADDRESS_MAX or not device.isprintable() or " " in device or not device:
            return f"invalid device {device!r}: must be 1-{ADDRESS_MAX} printable characters"
        if s.baud not in BAUDS:
            return f"invalid baud {s.baud}: must be one of {', '.join(map(str, BAUDS))}"
        if s.framing not in FRAMINGS:
            return f"invalid framing {s.framing!r}: must be one of {', '.join(FRAMINGS)}"
        return None
    if s.baud is not None or s.framing is not None:
        return "baud and framing are for serial outputs only"
    if s.transport == LISTEN and len(s.addresses) != 1:
        return "backup addresses are for connect outputs only"
    if len(s.addresses) > 1 + BACKUPS_MAX:
        return f"at most {BACKUPS_MAX} backup addresses"
    for address in s.addresses:
        problem = host_port_problem(address)
        if problem:
            return problem
    return None


def wanted(accounts: tuple[str, ...], account_number: str) -> bool:
    """Whether an output with ``accounts`` forwards what is about ``account_number`` ("" when
    no account could be made of the panel): every account without ``accounts``."""
    if not accounts:
        return True
    return bool(account_number) and account_number.startswith(accounts)


def signal_frame(
    settings: OutputSettings, account_panel: str, code: str, area: str, zone: str
) -> bytes:
    """The frame the output sends for a Contact ID event of the panel ``account_panel``
    (``5RRLs18AAAAQXYZGGCCC[DC4]``; hexadecimal digits sent upper case); ValueError when
    Sur-Gard cannot carry it (a panel that is not 1-10 hexadecimal digits)."""
    return contact_id_frame(
        settings.receiver,
        settings.line,
        account_panel.upper(),
        code,
        area,
        zone,
        settings.line_digits,
    )
