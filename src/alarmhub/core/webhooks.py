"""Webhooks' rules, no I/O: their secrets and signatures (the Standard Webhooks specification,
decisions section 10), which events a webhook wants, which of its deliveries may go now (in
order in each lane: the webhook's and one account's), and when a failed delivery is tried again.

A secret is ``whsec_`` and the base64 of 32 random bytes; an attempt's signature is ``v1,`` and
the base64 HMAC-SHA256, keyed with the secret's bytes, of ``{webhook-id}.{webhook-timestamp}.
{body}``. Any answer but a 2xx is a failure, retried on the schedule every channel shares
(:mod:`alarmhub.core.delivery`); then the delivery is ``failed``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit

from alarmhub.core.api_keys import ACCOUNTS_PATTERN
from alarmhub.core.events import KINDS

SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix, not a secret)
SECRET_BYTES = 32
URL_MAX = 2000
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
STATES = (PENDING, DELIVERED, FAILED)
ATTEMPT_SECONDS = 10.0
"""An attempt that has no answer by then is a failure (a timeout)."""


def new_secret() -> str:
    """A signing secret, shown once to whoever adds the webhook."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_bytes(secret: str) -> bytes:
    """The HMAC key a secret stands for (its base64 part, decoded)."""
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header of one attempt."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(secret: str, webhook_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Every header an attempt sends (``timestamp``: the attempt's own UNIX seconds)."""
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, webhook_id, timestamp, body),
        "content-type": "application/json",
    }


def delivered(status: int | None) -> bool:
    """Whether an attempt that was answered ``status`` delivered the event (any 2xx)."""
    return status is not None and 200 <= status < 300


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a webhook's, or None."""
    if len(url) > URL_MAX or not url.isprintable() or any(c.isspace() for c in url):
        return f"the URL must be at most {URL_MAX} printable characters without spaces"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port out of range raises here)
    except ValueError:
        return f"not a valid URL: {url[:80]!r}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "the URL must be http:// or https:// with a host"
    if parts.fragment:
        return "the URL must not have a fragment (#...)"
    if parts.username is not None or parts.password is not None:
        return "the URL must not carry a user or password (user:password@...): it would be shown"
    return None


Address = ipaddress.IPv4Address | ipaddress.IPv6Address
PRIVATE_SETTING = "webhook_allow_private"
"""The setting that lets a webhook's URL reach a private address (a receiver on the station's
own network, tests)."""


def address_problem(address: Address) -> str | None:
    """Why a webhook must not be sent to ``address`` unless private targets are allowed, or
    None: loopback, link-local, private (RFC 1918, shared, ULA), unspecified, multicast or
    any other address that is not public (an IPv4-mapped IPv6 address as its IPv4 one)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    kinds = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", not address.is_global),
    )
    kind = next((name for name, found in kinds if found), None)
    if kind is None:
        return None
    setting = f"ALARMHUB_{PRIVATE_SETTING.upper()}=1"
    return f"the URL's host is a {kind} address ({address}): set {setting} to allow it"


def resolved_problem(addresses: Iterable[str]) -> str | None:
    """Why a webhook must not go to a host that resolves to ``addresses`` (as the resolver
    gives them, an IPv6 one with its ``%scope``): the first address that is not public (every
    one must be, or a name that resolves to a public and a private address could be sent to the
    private one), or that it resolves to none."""
    found = False
    for text in addresses:
        found = True
        problem = address_problem(ipaddress.ip_address(text.partition("%")[0]))
        if problem:
            return problem
    return None if found else "the URL's host resolves to no address"


def shown_url(url: str) -> str:
    """A webhook's URL as listed: a user or password (of a webhook added before they were
    refused) replaced by ``***``."""
    try:
        parts = urlsplit(url)
        if parts.username is None and parts.password is None:
            return url
    except ValueError:
        return url
    return SplitResult(
        parts.scheme, "***@" + parts.netloc.rpartition("@")[2], parts.path, parts.query, ""
    ).geturl()


def subscription_problem(kinds: Iterable[str], accounts: str) -> str | None:
    """Why a webhook cannot hear of ``kinds`` for ``accounts`` (a prefix), or None."""
    kinds = list(kinds)
    if not kinds:
        return f"give at least one --event ({', '.join(KINDS)})"
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        return f"unknown event kind {unknown[0]!r}: use {', '.join(KINDS)}"
    if not ACCOUNTS_PATTERN.fullmatch(accounts):
        return "--accounts must be an account-number prefix of at most 9 letters or digits"
    return None


def wants(kinds: frozenset[str], accounts: str, kind: str, account: str) -> bool:
    """Whether a webhook of ``kinds`` and account prefix ``accounts`` hears of an event."""
    return kind in kinds and account.startswith(accounts)


def chain(lane: Iterable[tuple[int, int]], now_us: int) -> list[int]:
    """Which of a lane's pending deliveries, (id, due time) in event order, may be sent now, to
    be sent one after the other, each once the one before it is delivered: those from its first
    while they are due (one that waits for its retry holds back those after it)."""
    sendable: list[int] = []
    for delivery_id, due_us in lane:
        if due_us > now_us:
            break
        sendable.append(delivery_id)
    return sendable
