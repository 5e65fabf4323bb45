"""The email sender against a real SMTP server (aiosmtpd in its own process): what arrives, in
the clear, with STARTTLS and in implicit TLS, with AUTH; how refusals and a server that is down
end the attempt (decisions section 13); no header injected whatever the text holds."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from alarmhub.core import delivery
from alarmhub.outbound import email
from tests.support.processes import free_port
from tests.support.smtp_server import SmtpServer
from tests.support.webhook_receiver import closed_port

CREDENTIALS = ("station", "s3cret-pass")
MESSAGE = email.Email(
    sender="alarms@station.example",
    to="owner@shop.example",
    subject="700001 BURGLARY ALARM",
    text="Account 700001 (Corner Shop): BURGLARY ALARM, zone 3 back door, 08:00 CET",
    html="<p>Account 700001 (Corner Shop): <b>BURGLARY ALARM</b></p>",
    sender_name="Central Station",
)


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[SmtpServer]:
    server = SmtpServer(tmp_path / "smtp", free_port()).start()
    yield server
    server.stop()


def send(server: email.SmtpServer, message: email.Email = MESSAGE) -> delivery.Attempt:
    return asyncio.run(email.send(server, message))


def url(server: SmtpServer, scheme: str = "smtp") -> str:
    return f"{scheme}://localhost:{server.port}"


def test_a_message_arrives_with_its_text_and_html_parts(plain: SmtpServer) -> None:
    attempt = send(email.SmtpServer.from_url(url(plain)))
    assert attempt == delivery.sent(250)
    [arrived] = plain.arrived()
    assert (arrived.mail_from, arrived.rcpt_tos) == (MESSAGE.sender, [MESSAGE.to])
    message = arrived.message
    assert message["Subject"] == MESSAGE.subject
    assert message["From"] == f"Central Station <{MESSAGE.sender}>"
    assert message["To"] == MESSAGE.to
    assert message["Message-ID"] and message["Date"]
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None and html is not None
    assert text.get_content().strip() == MESSAGE.text
    assert html.get_content().strip() == MESSAGE.html


def test_hostile_text_injects_no_header_nor_recipient(plain: SmtpServer) -> None:
    hostile = email.Email(
        sender=MESSAGE.sender,
        to=MESSAGE.to,
        subject="700001 BURGLARY\r\nBcc: thief@evil.example\r\n\r\nforged body",
        text="zone: back door\r\n.\r\nMAIL FROM:<x@evil.example>",
        sender_name="Station\r\nBcc: thief@evil.example",
    )
    assert send(email.SmtpServer.from_url(url(plain)), hostile).verdict == delivery.SENT
    [arrived] = plain.arrived()
    assert arrived.rcpt_tos == [MESSAGE.to]
    assert arrived.message["Bcc"] is None
    assert arrived.message["Subject"] == "700001 BURGLARY Bcc: thief@evil.example forged body"
    assert b"\r\nBcc:" not in arrived.raw
    body = arrived.message.get_body(("plain",))
    assert body is not None and "MAIL FROM:<x@evil.example>" in body.get_content()


@pytest.mark.parametrize(
    "to",
    ["owner@shop.example, thief@evil.example", "owner@shop.example\r\nBcc: t@evil.example",
     "Owner <owner@shop.example>", "nobody", ""],
)  # fmt: skip
def test_an_address_that_is_not_one_plain_address_fails_unsent(plain: SmtpServer, to: str) -> None:
    attempt = send(email.SmtpServer.from_url(url(plain)), email.Email(MESSAGE.sender, to, "s", "t"))
    assert attempt.verdict == delivery.FAILED
    assert "not one plain email address" in (attempt.error or "")
    assert plain.arrived() == []


@pytest.mark.parametrize(
    ("stage", "reply", "verdict"),
    [
        ("data", "451 4.3.0 Try again later", delivery.RETRY),
        ("rcpt", "450 4.2.1 Mailbox busy", delivery.RETRY),
        ("data", "554 5.7.1 Message refused", delivery.FAILED),
        ("rcpt", "550 5.1.1 No such user", delivery.FAILED),
    ],
)
def test_smtp_4xx_is_retried_and_5xx_fails(
    plain: SmtpServer, stage: str, reply: str, verdict: str
) -> None:
    server = email.SmtpServer.from_url(url(plain))
    plain.answer(stage, reply)
    attempt = send(server)
    assert (attempt.verdict, attempt.code) == (verdict, int(reply[:3]))
    assert reply[4:] in (attempt.error or "")
    assert plain.arrived() == []
    plain.answer(stage, None)  # the server takes mail again: the retry goes
    assert send(server).verdict == delivery.SENT
    assert len(plain.arrived()) == 1


def test_a_sender_keeps_its_connection_and_replaces_one_the_server_closed(
    plain: SmtpServer,
) -> None:
    async def three() -> list[delivery.Attempt]:
        sender = email.EmailSender(email.SmtpServer.from_url(url(plain)))
        try:
            attempts = [await sender.send(MESSAGE), await sender.send(MESSAGE)]
            plain.stop()  # the kept connection is closed under it
            plain.start()
            attempts.append(await sender.send(MESSAGE))
            return attempts
        finally:
            await sender.close()

    assert [a.verdict for a in asyncio.run(three())] == [delivery.SENT] * 3
    assert len(plain.arrived()) == 3
    assert plain.greetings() == 2  # one connection for the first two, a new one after


@pytest.mark.parametrize("idle", [False, True])
def test_a_kept_connection_is_checked_only_once_it_was_idle_a_while(
    plain: SmtpServer, idle: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Used again at once, a kept connection goes on without a NOOP (a storm pays no extra
    round trip a message); kept longer than CHECK_AFTER_SECONDS, it is checked first."""
    if idle:
        monkeypatch.setattr(email, "CHECK_AFTER_SECONDS", 0.0)

    async def three() -> list[delivery.Attempt]:
        sender = email.EmailSender(email.SmtpServer.from_url(url(plain)))
        try:
            return [await sender.send(MESSAGE) for _ in range(3)]
        finally:
            await sender.close()

    assert [a.verdict for a in asyncio.run(three())] == [delivery.SENT] * 3
    assert (plain.greetings(), plain.noops()) == (1, 2 if idle else 0)


def test_concurrent_messages_share_a_bounded_number_of_connections(plain: SmtpServer) -> None:
    async def many() -> list[delivery.Attempt]:
        server = email.SmtpServer.from_url(url(plain))
        sender = email.EmailSender(server, connections_max=2)
        try:
            return list(await asyncio.gather(*(sender.send(MESSAGE) for _ in range(20))))
        finally:
            await sender.close()

    assert [a.verdict for a in asyncio.run(many())] == [delivery.SENT] * 20
    assert len(plain.arrived()) == 20
    assert plain.greetings() <= 2


def test_a_refused_message_leaves_the_connection_usable(plain: SmtpServer) -> None:
    async def two() -> list[delivery.Attempt]:
        sender = email.EmailSender(email.SmtpServer.from_url(url(plain)))
        try:
            plain.answer("rcpt", "550 5.1.1 No such user")
            refused = await sender.send(MESSAGE)
            plain.answer("rcpt", None)
            return [refused, await sender.send(MESSAGE)]
        finally:
            await sender.close()

    assert [a.verdict for a in asyncio.run(two())] == [delivery.FAILED, delivery.SENT]
    assert len(plain.arrived()) == 1
    assert plain.greetings() == 1


def test_a_server_that_is_down_is_retried() -> None:
    attempt = send(email.SmtpServer("127.0.0.1", closed_port(), timeout=5))
    assert attempt.verdict == delivery.RETRY
    assert attempt.code is None and attempt.error


def test_starttls_required_from_a_server_that_does_not_offer_it_fails_unsent(
    plain: SmtpServer,
) -> None:
    attempt = send(email.SmtpServer.from_url(url(plain), starttls=True))
    assert attempt.verdict == delivery.FAILED
    assert "STARTTLS" in (attempt.error or "")
    assert plain.arrived() == []


@pytest.fixture
def starttls(tmp_path: Path) -> Iterator[SmtpServer]:
    server = SmtpServer(tmp_path / "smtp", free_port(), "starttls", CREDENTIALS).start()
    yield server
    server.stop()


def test_starttls_then_auth(starttls: SmtpServer) -> None:
    user, password = CREDENTIALS
    server = email.SmtpServer.from_url(url(starttls), starttls=True, user=user,
                                       password=password, context=starttls.context)  # fmt: skip
    assert send(server) == delivery.sent(250)
    assert [a.rcpt_tos for a in starttls.arrived()] == [[MESSAGE.to]]


def test_a_wrong_password_fails_for_good(starttls: SmtpServer) -> None:
    server = email.SmtpServer.from_url(url(starttls), starttls=True, user=CREDENTIALS[0],
                                       password="wrong", context=starttls.context)  # fmt: skip
    attempt = send(server)
    assert (attempt.verdict, attempt.code) == (delivery.FAILED, 535)
    assert "wrong" not in (attempt.error or "")
    assert starttls.arrived() == []


def test_mail_in_the_clear_to_a_server_requiring_starttls_fails(starttls: SmtpServer) -> None:
    attempt = send(email.SmtpServer.from_url(url(starttls)))
    assert attempt.verdict == delivery.FAILED
    assert attempt.code is not None and 500 <= attempt.code < 600
    assert starttls.arrived() == []


def test_a_certificate_not_trusted_is_retried_unsent(starttls: SmtpServer) -> None:
    user, password = CREDENTIALS
    server = email.SmtpServer.from_url(url(starttls), starttls=True, user=user, password=password)
    attempt = send(server)  # the default context: the self-signed certificate is not trusted
    assert attempt.verdict == delivery.RETRY
    assert "certificate" in (attempt.error or "").lower()
    assert starttls.arrived() == []


def test_implicit_tls_with_auth(tmp_path: Path) -> None:
    served = SmtpServer(tmp_path / "smtps", free_port(), "implicit", CREDENTIALS).start()
    try:
        user, password = CREDENTIALS
        server = email.SmtpServer.from_url(url(served, "smtps"), user=user, password=password,
                                           context=served.context)  # fmt: skip
        assert server.tls == "implicit"
        assert send(server) == delivery.sent(250)
        assert len(served.arrived()) == 1
    finally:
        served.stop()


def test_the_password_is_not_in_the_servers_repr() -> None:
    server = email.SmtpServer.from_url("smtp://mail.example", user="u", password="hunter2")
    assert "hunter2" not in repr(server)
    assert (server.port, server.tls) == (25, "none")
    assert email.SmtpServer.from_url("smtps://mail.example").port == 465


@pytest.mark.parametrize(
    ("given", "starttls", "problem"),
    [
        ("http://mail.example", False, "smtp://HOST"),
        ("smtp://", False, "smtp://HOST"),
        ("smtps://mail.example", True, "STARTTLS is for smtp://"),
        ("smtp://mail.example:99999", False, "out of range"),
    ],
)
def test_a_url_that_cannot_be_a_servers(given: str, starttls: bool, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        email.SmtpServer.from_url(given, starttls=starttls)
