"""Email, the sender: one message (subject, plain text, an HTML alternative, From, To) through an
SMTP server with aiosmtplib, and how the attempt ended (:mod:`alarmhub.core.delivery`, decisions
section 13). No database: the notification channel gives it what to send. :class:`EmailSender`
keeps a few connections open between messages; :func:`send` sends one on its own connection.

The server is a URL: ``smtp://HOST[:PORT]`` (25 unless given) in the clear or, with
``starttls``, upgraded by STARTTLS (refused if the server does not offer it: never sent in the
clear instead), and ``smtps://HOST[:PORT]`` (465 unless given) in TLS from the first byte.
Certificates are verified (the default context, or the ``tls`` one given). A user and password
authenticate (AUTH) once the connection is encrypted where it is to be.

The message is written as RFC 5322 and MIME bytes (:func:`build`): its few fixed headers, a
plain-text part and an HTML alternative, each UTF-8 in quoted-printable (no line over 76
characters), non-ASCII header text in RFC 2047 encoded words, with the standard library's
encoders (``email.header``, ``email.quoprimime``, ``email.utils``); a tenth of the CPU of an
:class:`email.message.EmailMessage` (whose header registry parsed every header again), which
was most of what a message cost to send. A subject or name holding CR or LF (hostile text from
an account's or zone's description) is made one line, and an address that is not one plain
``local@domain`` is refused, so no header can be injected.

Outcomes: refused or broken connections, timeouts and SMTP 4xx are retried; SMTP 5xx (a rejected
sender or recipient, failed authentication, a refused message) and a server that cannot do what
its URL asks (no STARTTLS, no AUTH) fail the message for good.
"""

from __future__ import annotations

import asyncio
import ssl
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import quoprimime
from email.errors import HeaderParseError
from email.header import Header
from email.headerregistry import Address
from email.utils import format_datetime, formataddr, make_msgid
from functools import lru_cache
from urllib.parse import urlsplit

import aiosmtplib

from alarmhub.core import delivery
from alarmhub.core.notifications import header_safe

SCHEMES = {"smtp": 25, "smtps": 465}
TIMEOUT_SECONDS = 10.0
"""Each step of a conversation (connect, each command) may take this long."""


@dataclass(frozen=True)
class SmtpServer:
    """Where email goes: ``host``, ``port``, ``tls`` (``"none"``, ``"starttls"`` or
    ``"implicit"``), a user and password (AUTH) when both are given, and a TLS context (None:
    the default one, certificates verified against the system's authorities)."""

    host: str
    port: int
    tls: str = "none"
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    context: ssl.SSLContext | None = field(default=None, repr=False)
    timeout: float = TIMEOUT_SECONDS

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        starttls: bool = False,
        user: str | None = None,
        password: str | None = None,
        context: ssl.SSLContext | None = None,
    ) -> SmtpServer:
        """The server of an ``smtp://`` or ``smtps://`` URL (``starttls`` with ``smtp://``);
        ``ValueError`` when it is neither (or its port is out of range). What a station may set
        as its gateway is checked when it is set (:mod:`alarmhub.core.notifications`): a URL
        carries no credentials, they come apart."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES or not parts.hostname:
            raise ValueError("an SMTP server's URL is smtp://HOST[:PORT] or smtps://HOST[:PORT]")
        if starttls and scheme == "smtps":
            raise ValueError("smtps:// is TLS from the start: STARTTLS is for smtp://")
        tls = "implicit" if scheme == "smtps" else "starttls" if starttls else "none"
        return cls(parts.hostname or "", parts.port or SCHEMES[scheme], tls, user or None,
                   password or None, context)  # fmt: skip


@dataclass(frozen=True)
class Email:
    """One message: from ``sender`` (a plain address, shown with ``sender_name``) to ``to``."""

    sender: str
    to: str
    subject: str
    text: str
    html: str | None = None
    sender_name: str = ""


SUBJECT_MAX = 900
"""A subject is cut to this many characters (one header line)."""
ENCODED_LINE = 76
"""Encoded header words and quoted-printable body lines are at most this long (RFC 2045)."""
CRLF = "\r\n"


@lru_cache(maxsize=4096)  # the sender's, and a recipient's for each message of a storm
def address(text: str, name: str = "") -> Address:
    """One plain ``local@domain`` address (with a display name), as the standard library parses
    it; ``ValueError`` for anything else (several addresses, a display name inside, CR or LF)."""
    try:
        parsed = Address(addr_spec=text)
    except (ValueError, IndexError, HeaderParseError) as exc:  # a defect is a ValueError
        raise ValueError(f"not one plain email address: {text[:80]!r}") from exc
    if not parsed.username or not parsed.domain or parsed.addr_spec != text:
        raise ValueError(f"not one plain email address: {text[:80]!r}")
    return Address(header_safe(name)[:200], parsed.username, parsed.domain)


def build(email: Email) -> bytes:
    """The message as sent: a plain-text part and, when given, an HTML alternative; a Date and
    a Message-ID. ``ValueError`` when an address is not one plain address."""
    sender = address(email.sender, email.sender_name)
    to = address(email.to)
    lines = [
        f"From: {formataddr((sender.display_name, sender.addr_spec), charset='utf-8')}",
        f"To: {to.addr_spec}",
        f"Subject: {_header_text(header_safe(email.subject)[:SUBJECT_MAX], 'Subject')}",
        f"Date: {format_datetime(datetime.now(UTC))}",
        f"Message-ID: {make_msgid(domain=sender.domain)}",
        "MIME-Version: 1.0",
    ]
    if email.html is None:
        lines += _part("plain", email.text)
    else:  # "=_" never occurs in quoted-printable text: the boundary cannot be in a part
        boundary = f"=_{uuid.uuid4().hex}"
        lines += [f'Content-Type: multipart/alternative; boundary="{boundary}"', "",
                  f"--{boundary}", *_part("plain", email.text),
                  f"--{boundary}", *_part("html", email.html), f"--{boundary}--"]  # fmt: skip
    return (CRLF.join(lines) + CRLF).encode("ascii")


def _header_text(text: str, name: str) -> str:
    """A header's text as written: ASCII as it is, on one line (a subject is never folded:
    folded, one with a colon in its first word was read back broken); else RFC 2047 encoded
    words of UTF-8, folded between words."""
    if text.isascii():
        return text
    return Header(text, "utf-8", ENCODED_LINE, header_name=name).encode(linesep=CRLF)


def _part(subtype: str, text: str) -> list[str]:
    """A text part's headers and body: UTF-8 in quoted-printable, its lines ending in CRLF."""
    raw = text.replace("\r\n", "\n").replace("\r", "\n").encode("utf-8").decode("latin-1")
    body = quoprimime.body_encode(raw, ENCODED_LINE, eol=CRLF)
    return [f'Content-Type: text/{subtype}; charset="utf-8"',
            "Content-Transfer-Encoding: quoted-printable", "", body]  # fmt: skip


CONNECTIONS_MAX = 8
"""Connections to one server at most (servers limit how many one client may open)."""
CHECK_AFTER_SECONDS = 5.0
"""A kept connection idle longer than this is checked (NOOP) before it is used again; one used
more recently goes on at once (a storm does not pay a round trip a message)."""


class EmailSender:
    """Sends messages through one SMTP server on at most ``connections_max`` connections at
    once, keeping up to ``idle_max`` open between messages (a storm does not pay a connection,
    a TLS handshake and AUTH for each): :meth:`send`; then :meth:`close`. A kept connection idle
    for over CHECK_AFTER_SECONDS is checked (NOOP) before it is used again; one the server
    closed meanwhile is replaced, and a message the server hung up on before answering, on a
    connection kept but not checked, is sent at once on a new one."""

    def __init__(
        self,
        server: SmtpServer,
        idle_max: int = CONNECTIONS_MAX,
        connections_max: int = CONNECTIONS_MAX,
    ) -> None:
        self.server = server
        self._idle_max = idle_max
        self._idle: list[tuple[aiosmtplib.SMTP, float]] = []  # and when it was last used
        self._slots = asyncio.Semaphore(connections_max)

    async def send(self, email: Email) -> delivery.Attempt:
        """Send one message (once a connection is free); how the attempt ended."""
        try:
            message = build(email)
        except ValueError as exc:
            return delivery.failed(str(exc))
        async with self._slots:
            return await self._send(message, email)

    async def _send(self, message: bytes, email: Email) -> delivery.Attempt:
        client: aiosmtplib.SMTP | None = None
        try:
            client, checked = await self._connection()
            try:
                await client.sendmail(email.sender, [email.to], message)  # as built
            except aiosmtplib.SMTPServerDisconnected:
                if checked:
                    raise
                client.close()  # closed by the server while it was kept: a new one
                client = await self._connect()
                await client.sendmail(email.sender, [email.to], message)
            attempt = delivery.sent(250)
        except aiosmtplib.SMTPRecipientsRefused as exc:
            refused = exc.recipients[0]
            attempt = delivery.smtp_attempt(refused.code, refused.message)
        except aiosmtplib.SMTPResponseException as exc:
            attempt = delivery.smtp_attempt(exc.code, exc.message)
        except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPTimeoutError, OSError) as exc:
            attempt = delivery.retry(f"{type(exc).__name__}: {exc}")  # no connection, TLS
        except aiosmtplib.SMTPException as exc:  # it cannot: no STARTTLS, no AUTH, no SMTPUTF8
            attempt = delivery.failed(f"the SMTP server cannot: {exc}")
        except BaseException:  # cancelled: the connection is in an unknown state
            if client is not None:
                client.close()
            raise
        if client is not None:
            # answered (sent, or refused and its envelope reset): the connection can go on
            await self._done(client, keep=attempt.code is not None)
        return attempt

    async def close(self) -> None:
        """Close the connections kept (QUIT, each within the server's timeout)."""
        idle, self._idle = self._idle, []
        for client, _ in idle:
            await _quit(client)

    async def _connection(self) -> tuple[aiosmtplib.SMTP, bool]:
        """A connection to send on (a kept one when there is one) and whether it is known to
        be open: new, or checked with a NOOP."""
        loop = asyncio.get_running_loop()
        while self._idle:
            client, used = self._idle.pop()
            if not client.is_connected:
                client.close()
                continue
            if loop.time() - used <= CHECK_AFTER_SECONDS:
                return client, False
            try:
                await client.noop()
                return client, True
            except (aiosmtplib.SMTPException, OSError):
                client.close()
        return await self._connect(), True

    async def _connect(self) -> aiosmtplib.SMTP:
        server = self.server
        client = aiosmtplib.SMTP(
            hostname=server.host,
            port=server.port,
            username=server.user if server.password else None,
            password=server.password if server.user else None,
            use_tls=server.tls == "implicit",
            start_tls=server.tls == "starttls",
            tls_context=server.context,
            timeout=server.timeout,
        )
        try:
            await client.connect()
        except BaseException:
            client.close()
            raise
        return client

    async def _done(self, client: aiosmtplib.SMTP, keep: bool) -> None:
        if keep and client.is_connected and len(self._idle) < self._idle_max:
            self._idle.append((client, asyncio.get_running_loop().time()))
        else:
            await _quit(client)


async def _quit(client: aiosmtplib.SMTP) -> None:
    try:
        if client.is_connected:
            await client.quit()
    except (aiosmtplib.SMTPException, OSError):
        pass
    finally:
        client.close()


async def send(server: SmtpServer, email: Email) -> delivery.Attempt:
    """Send one message on a connection of its own; how the attempt ended."""
    sender = EmailSender(server, idle_max=0)
    try:
        return await sender.send(email)
    finally:
        await sender.close()
