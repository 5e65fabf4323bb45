"""The console's sign-in rules: how long a session lasts, and the throttle: failures counted per
(client address, operator code), and the wait they earn. Pure rules over times given by the
caller; the console holds one throttle per node.

A session lasts ``SESSION_HOURS`` from its sign-in, a twelve-hour shift; then the operator signs
in again. The session's cookie lives exactly as long.

A pair's first ``FREE_FAILURES`` failures in ``WINDOW_SECONDS`` cost nothing. After that the pair
must wait ``FIRST_WAIT_SECONDS`` after its last failure, doubling with every further failure up
to ``MAX_WAIT_SECONDS``; an attempt made while it waits is refused without checking the password
and counts as a failure too. Unknown codes are counted exactly as real ones, and one pair's
failures never touch another pair: other codes from the same address, the same code from
another address.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict, deque

from alarmhub.core import units

SESSION_HOURS = 12
SESSION_SECONDS = SESSION_HOURS * 60 * 60


def session_expires_us(signed_in_us: int) -> int:
    """When a session opened at ``signed_in_us`` ends: from then on it lets no one in."""
    return signed_in_us + units.hours_us(SESSION_HOURS)


FREE_FAILURES = 5
WINDOW_SECONDS = 15 * 60.0
FIRST_WAIT_SECONDS = 30.0
MAX_WAIT_SECONDS = 15 * 60.0
MAX_PAIRS = 10_000
IPV6_PREFIX = 64
_KEPT_FAILURES = 16  # enough for the longest wait (30 s doubled 5 times is over 15 minutes)

Pair = tuple[str, str]


def client_key(address: str) -> str:
    """The part of a client address that throttling counts by: an IPv4 address as it is, an
    IPv6 address by its /64 network (one host is commonly given a whole /64)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_PREFIX), strict=False))
    return str(ip)


def wait_after(failures: int) -> float:
    """Seconds a pair waits after its last failure when it has ``failures`` in the window."""
    if failures < FREE_FAILURES:
        return 0.0
    return min(MAX_WAIT_SECONDS, FIRST_WAIT_SECONDS * 2.0 ** (failures - FREE_FAILURES))


class SignInThrottle:
    """Failures per (address, code) pair within the window, at most ``max_pairs`` pairs (the
    least recently tried is forgotten first), at most 16 failure times per pair."""

    def __init__(self, max_pairs: int = MAX_PAIRS) -> None:
        self.max_pairs = max_pairs
        self._pairs: OrderedDict[Pair, deque[float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pairs)

    def attempt(self, address: str, code: str, now: float) -> float:
        """Count one attempt of ``code`` from ``address`` as a failure (:meth:`succeeded`
        forgives it) and say whether it may go on: 0.0 when its password may be checked,
        else the seconds the pair must now wait (the attempt is refused, and counted).

        The attempt counts before its password is checked, so that attempts made at the same
        moment see each other: a burst of them gets no more checks than attempts one by one."""
        pair = (client_key(address), code)
        failures = self._pairs.pop(pair, None)
        if failures is None:
            failures = deque(maxlen=_KEPT_FAILURES)
        while failures and failures[0] <= now - WINDOW_SECONDS:
            failures.popleft()
        waiting = bool(failures) and now < failures[-1] + wait_after(len(failures))
        failures.append(now)
        self._pairs[pair] = failures
        while len(self._pairs) > self.max_pairs:
            self._pairs.popitem(last=False)
        return wait_after(len(failures)) if waiting else 0.0

    def succeeded(self, address: str, code: str) -> None:
        """The right password: the pair's failures are forgotten, this attempt's too."""
        self._pairs.pop((client_key(address), code), None)
