"""The bytes of an email as the sender writes them (alarmhub.outbound.email.build), read back
by the standard library's own parser: the headers, non-ASCII text in the subject, the sender's
name and the parts, lines within RFC 5322's and RFC 2045's lengths, and no header made of
hostile text."""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest

from alarmhub.outbound.email import ENCODED_LINE, SUBJECT_MAX, Email, build

TEXT = "Konto 700001 (Bäckerei Müller): EINBRUCH, Zone 3 Hintertür\n= 100 %\n.\nZeile " + "x" * 200
HTML = "<p>Konto 700001 (Bäckerei Müller): <b>EINBRUCH</b> – Zone 3</p>"
MESSAGE = Email("alarms@station.example", "owner@shop.example", "700001 EINBRUCH Hintertür",
                TEXT, HTML, "Leitstelle Süd")  # fmt: skip
HEADERS = ["From", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type"]
ONE_PART = [*HEADERS, "Content-Transfer-Encoding"]


def content(part: EmailMessage | None) -> str:
    """A text part's content, its lines ended as Python's (CRLF on the wire)."""
    assert part is not None
    text = part.get_content()
    assert isinstance(text, str)
    return text.replace("\r\n", "\n").rstrip("\n")


def parsed(raw: bytes) -> EmailMessage:
    message = message_from_bytes(raw, policy=policy.default)
    assert isinstance(message, EmailMessage)
    return message


def test_the_message_reads_back_whole_with_its_non_ascii_text() -> None:
    raw = build(MESSAGE)
    message = parsed(raw)
    assert list(message.keys()) == HEADERS
    assert message["Subject"] == MESSAGE.subject
    assert message["From"] == f"{MESSAGE.sender_name} <{MESSAGE.sender}>"
    assert message["To"] == MESSAGE.to
    assert message.get_content_type() == "multipart/alternative"
    text, html = message.get_body(("plain",)), message.get_body(("html",))
    assert content(text) == TEXT and content(html) == HTML
    assert text is not None and html is not None
    assert not message.defects and not text.defects and not html.defects
    lines = raw.split(b"\r\n")
    assert raw.endswith(b"\r\n") and b"\n" not in raw.replace(b"\r\n", b"")
    assert max(len(line) for line in lines[lines.index(b"") :]) <= ENCODED_LINE


def test_a_plain_text_message_is_one_part() -> None:
    message = parsed(build(Email(MESSAGE.sender, MESSAGE.to, "ALARM", "zone 3\r\nback door")))
    assert message.get_content_type() == "text/plain"
    assert content(message) == "zone 3\nback door" and list(message.keys()) == ONE_PART
    assert message["From"] == MESSAGE.sender


def test_a_long_ascii_subject_stays_one_line_and_a_long_non_ascii_one_is_folded() -> None:
    subject = "700001: " + "BURGLARY " * 200
    raw = build(Email(MESSAGE.sender, MESSAGE.to, subject, "x"))
    [line] = [ln for ln in raw.split(b"\r\n") if ln.startswith(b"Subject:")]
    assert len(line) <= 998 and parsed(raw)["Subject"] == subject[:SUBJECT_MAX].strip()
    accented = "Hintertür " * 40
    raw = build(Email(MESSAGE.sender, MESSAGE.to, accented, "x"))
    assert max(len(ln) for ln in raw.split(b"\r\n")) <= 998
    assert parsed(raw)["Subject"] == accented.strip()


def test_hostile_text_makes_no_header() -> None:
    raw = build(Email(MESSAGE.sender, MESSAGE.to, "A\r\nBcc: thief@evil.example\r\n\r\nforged",
                      "body", None, "Station\nBcc: thief@evil.example"))  # fmt: skip
    message = parsed(raw)
    assert message["Bcc"] is None and list(message.keys()) == ONE_PART
    assert b"\r\nBcc:" not in raw


@pytest.mark.parametrize("to", ["a@b.example, c@d.example", "Thief <t@evil.example>", "nobody"])
def test_an_address_that_is_not_one_plain_address_is_refused(to: str) -> None:
    with pytest.raises(ValueError, match="not one plain email address"):
        build(Email(MESSAGE.sender, to, "x", "y"))
