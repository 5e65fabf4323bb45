"""Notifications to subscribers (decisions section 13), the rules without I/O: the KINDS a
contact subscribes to and which kind a published event or a routed signal is; the channels;
the messages, rendered from templates per kind and channel (``string.Template`` placeholders
``$account $text $name $zone $time``, defaults here, a station's overrides checked by
:func:`template_problem`); and what a header may hold (no CR, LF or other control character,
whatever a name or a description holds).

Which kind:

- ``alarm``: an ``alarm.raised`` event of an account's alarm entering pending, unless its TYPE
  is a trouble's or a schedule alarm's;
- ``trouble``: such an event whose TYPE is one of :data:`TROUBLE_TYPES` (troubles, supervisory
  alarms, low battery, AC power, communication troubles, FAIL TO TEST, COMMUNICATION FAILURE,
  TEST END NOT RESTORED);
- ``schedule``: such an event whose TYPE is one of :data:`SCHEDULE_TYPES` (LATE TO OPEN, LATE TO
  CLOSE, UNSCHEDULED OPEN, EARLY CLOSE);
- ``openclose``: a routed opening or closing (a DC-05 open/close code) that went to history
  (path HISTORY); those of an account on test (path ONTEST) or in runaway notify nobody;
- ``test``: ``account.test_started`` and ``account.test_ended``.

Signals of an account on test raise no alarm and go to history with path ONTEST: they notify
nobody. The station's own alarms (no account) notify nobody either.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from email.errors import HeaderParseError
from email.headerregistry import Address
from functools import lru_cache
from string import Template
from typing import Any
from urllib.parse import urlsplit

from alarmhub.core import events, on_test, schedules, units
from alarmhub.core.alarm_types import (
    COMMUNICATION_FAILURE,
    EARLY_CLOSE,
    FAIL_TO_TEST,
    LATE_TO_CLOSE,
    LATE_TO_OPEN,
    TEST_END_NOT_RESTORED,
    UNSCHEDULED_OPEN,
)
from alarmhub.core.operations import AlarmState

ALARM, TROUBLE, OPENCLOSE, SCHEDULE, TEST = "alarm", "trouble", "openclose", "schedule", "test"
KINDS = (ALARM, TROUBLE, OPENCLOSE, SCHEDULE, TEST)
EMAIL, SMS = "email", "sms"
CHANNELS = (EMAIL, SMS)
QUEUED, SENT, FAILED = "queued", "sent", "failed"
STATES = (QUEUED, SENT, FAILED)
LANES = "notify"
"""The lanes' channel (:mod:`alarmhub.store.lanes`): a contact (target) and a channel (key)."""

SCHEDULE_TYPES = frozenset(
    a.type for a in (LATE_TO_OPEN, LATE_TO_CLOSE, UNSCHEDULED_OPEN, EARLY_CLOSE)
)
TROUBLE_TYPES = frozenset(
    {"TRBL", "SUPV", "BATT", "ACPWR", "COMM"}
    | {a.type for a in (FAIL_TO_TEST, COMMUNICATION_FAILURE, TEST_END_NOT_RESTORED)}
)
OPEN_CLOSE_PATH = "HISTORY"
"""The path (PR_CHECKSUM) of the routed openings and closings that notify: history (not on
test, not in runaway)."""


NOTIFYING_EVENTS = frozenset({events.ALARM_RAISED, events.TEST_STARTED, events.TEST_ENDED})
"""The kinds of published event that may notify (their data says whether one does)."""


def event_kind(kind: str, account: str, data: Mapping[str, Any]) -> str | None:
    """The notification kind of a published event (its ``kind``, account and ``data``), or None
    when it notifies nobody."""
    if not account or kind not in NOTIFYING_EVENTS:
        return None
    if kind == events.ALARM_RAISED:
        if data.get("state", AlarmState.PENDING) != AlarmState.PENDING:
            return None  # the storm list: not pending
        alarm_type = str(data.get("type", ""))
        if alarm_type in SCHEDULE_TYPES:
            return SCHEDULE
        return TROUBLE if alarm_type in TROUBLE_TYPES else ALARM
    return TEST  # a test's start or end


def signal_kind(code: str, path: str) -> str | None:
    """The notification kind of a routed signal's history event (its code, such as ``E401``,
    and its path), or None: openings and closings gone to history are ``openclose``."""
    if path == OPEN_CLOSE_PATH and schedules.is_open_close(code):
        return OPENCLOSE
    return None


def event_text(kind: str, data: Mapping[str, Any]) -> str:
    """The HIST_TEXT a published event's message holds: the alarm's, or for a test's start or
    end the text its history record has."""
    if kind == events.TEST_STARTED:
        started = datetime.fromisoformat(str(data["started"]).replace("Z", "+00:00"))
        ends = datetime.fromisoformat(str(data["ends"]).replace("Z", "+00:00"))
        minutes = max(0, round((ends - started).total_seconds() / 60))
        return on_test.start_text(
            minutes, str(data.get("by") or ""), data.get("zones") or [], data.get("types") or [],
            str(data.get("reason") or ""),
        )  # fmt: skip
    if kind == events.TEST_ENDED:
        return on_test.return_text(data.get("ended_by"))
    return str(data.get("hist_text", ""))


# what may be sent ----------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u0085]")


def header_safe(value: str) -> str:
    """``value`` fit for a header (a subject, an address): every control character (CR, LF,
    NUL, ...), line or paragraph separator and format character made a space, trimmed."""
    cleaned = _CONTROL.sub(" ", value)
    if not cleaned.isascii():  # ASCII has no format characters or separators but the above
        cleaned = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
                          for c in cleaned)  # fmt: skip
    return " ".join(cleaned.split())


def text_safe(value: str) -> str:
    """A value put into a message's text (a name, a description): on one line, no control
    characters (so that it cannot make lines of its own)."""
    return header_safe(value)


EMAIL_MAX = 120


def email_problem(address: str) -> str | None:
    """Why ``address`` is not an e-mail address a message can go to, or None."""
    if not address or len(address) > EMAIL_MAX:
        return f"an e-mail address is 1-{EMAIL_MAX} characters"
    if _CONTROL.search(address) or any(c.isspace() for c in address):
        return f"e-mail address {address!r} holds a space or a control character"
    try:
        parsed = Address(addr_spec=address)
    except (HeaderParseError, ValueError, IndexError) as exc:
        return f"e-mail address {address!r} is not an address: {exc}"
    if not parsed.username or not parsed.domain or parsed.addr_spec != address:
        return f"e-mail address {address!r} is not an address"
    return None


def subscription_problem(
    notify: tuple[str, ...], notify_by: tuple[str, ...], email: str, has_mobile: bool
) -> str | None:
    """Why a contact cannot subscribe to the kinds ``notify`` by the channels ``notify_by``
    (its e-mail address ``email``, whether it has a mobile phone), or None."""
    unknown = [k for k in notify if k not in KINDS]
    if unknown:
        return f"unknown notification kind {unknown[0]!r}: one of {', '.join(KINDS)}"
    unknown = [c for c in notify_by if c not in CHANNELS]
    if unknown:
        return f"unknown notification channel {unknown[0]!r}: one of {', '.join(CHANNELS)}"
    if notify and not notify_by:
        return "a contact notified of something needs a channel (notify_by: email, sms)"
    if EMAIL in notify_by and not email:
        return "notification by e-mail needs the contact's e-mail address"
    if email:
        problem = email_problem(email)
        if problem:
            return problem
    if SMS in notify_by and not has_mobile:
        return "notification by SMS needs one of the contact's phones to be a mobile"
    return None


def words(values: tuple[str, ...] | list[str]) -> str:
    """Kinds or channels as a column keeps them: space-separated, each once, in the order of
    :data:`KINDS` and :data:`CHANNELS`."""
    order = {name: n for n, name in enumerate((*KINDS, *CHANNELS))}
    return " ".join(sorted(set(values), key=lambda v: order.get(v, len(order))))


# gateways -------------------------------------------------------------------------------------

TWILIO, JSON = "twilio", "json"
SMS_FORMATS = (TWILIO, JSON)
STARTTLS, IMPLICIT_TLS = "starttls", "implicit"
URL_MAX = 2000


def smtp_problem(url: str, sender: str) -> str | None:
    """Why an SMTP gateway ``smtp://HOST:PORT`` (or ``smtps://`` for implicit TLS) sending from
    ``sender`` cannot be used, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        return "the SMTP gateway's URL is smtp://HOST:PORT (or smtps://HOST:PORT, implicit TLS)"
    if parts.username or parts.password:
        return "the SMTP URL holds no user or password (the password comes from the environment)"
    try:
        parts.port  # noqa: B018 - a port out of range raises
    except ValueError:
        return "the SMTP gateway's port must be 1-65535"
    if parts.path not in ("", "/") or parts.query or parts.fragment or len(url) > URL_MAX:
        return "the SMTP gateway's URL is smtp://HOST:PORT, nothing more"
    return email_problem(sender) if sender else None


def default_sender(host: str) -> str:
    """The From of e-mail when a station sets none: ``alarmhub@`` the machine's name ``host``
    (``alarmhub@localhost`` when that is no mail domain)."""
    sender = f"alarmhub@{host.strip().lower()}"
    return sender if email_problem(sender) is None else "alarmhub@localhost"


def sms_problem(url: str, fmt: str) -> str | None:
    """Why an HTTP SMS gateway at ``url`` in format ``fmt`` cannot be used, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > URL_MAX:
        return "the SMS gateway's URL is an http:// or https:// URL"
    if parts.username or parts.password:
        return "the SMS URL holds no user or password (they come from the environment)"
    if _CONTROL.search(url):
        return "the SMS gateway's URL holds a control character"
    if fmt not in SMS_FORMATS:
        return f"the SMS format is one of {', '.join(SMS_FORMATS)}"
    return None


# templates ------------------------------------------------------------------------------------

PLACEHOLDERS = ("account", "text", "name", "zone", "time")
SUBJECT, BODY = "subject", "body"
TEMPLATE_MAX = 2000
SUBJECT_MAX = 200


@dataclass(frozen=True, slots=True)
class Templates:
    """A kind's and channel's message: its subject (e-mail only; '' for SMS) and its body."""

    subject: str
    body: str


_EMAIL_SUBJECT = "$account $text"
_EMAIL_BODY = """\
$text

Account: $account $name
Zone: $zone
Time: $time
"""
_SMS_BODY = "$account $text"
DEFAULTS: Mapping[tuple[str, str], Templates] = {
    **{(kind, EMAIL): Templates(_EMAIL_SUBJECT, _EMAIL_BODY) for kind in KINDS},
    **{(kind, SMS): Templates("", _SMS_BODY) for kind in KINDS},
}
"""The templates a station starts with, per (kind, channel)."""


def key_problem(kind: str, channel: str) -> str | None:
    """Why (``kind``, ``channel``) names no template, or None."""
    if kind not in KINDS:
        return f"unknown kind {kind!r}: one of {', '.join(KINDS)}"
    if channel not in CHANNELS:
        return f"unknown channel {channel!r}: one of {', '.join(CHANNELS)}"
    return None


def _text_problem(what: str, text: str, most: int) -> str | None:
    if len(text) > most:
        return f"the {what} template must be at most {most} characters"
    template = Template(text)
    if not template.is_valid():
        return (
            f"the {what} template is not valid: write a placeholder as $name or ${{name}}, "
            "and a dollar sign as $$"
        )
    unknown = sorted(set(template.get_identifiers()) - set(PLACEHOLDERS))
    if unknown:
        allowed = " ".join(f"${p}" for p in PLACEHOLDERS)
        return f"the {what} template has unknown placeholder(s) {', '.join(unknown)}: use {allowed}"
    return None


def template_problem(channel: str, templates: Templates) -> str | None:
    """Why a station's templates for ``channel`` cannot be used, or None."""
    if channel == EMAIL:
        if not templates.subject.strip():
            return "an e-mail's subject template must not be empty"
        problem = _text_problem(SUBJECT, templates.subject, SUBJECT_MAX)
        if problem:
            return problem
    elif templates.subject:
        return "an SMS has no subject"
    if not templates.body.strip():
        return "the body template must not be empty"
    return _text_problem(BODY, templates.body, TEMPLATE_MAX)


# messages -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Occurrence:
    """What a message tells of: the account, its name, the HIST_TEXT, the zone's description
    (with its number; '' when the event names no zone or the zone has none) and when."""

    account: str
    text: str
    at_us: int
    name: str = ""
    zone: str = ""


@dataclass(frozen=True, slots=True)
class Message:
    """A rendered message: the subject (e-mail), the plain text and the HTML part (e-mail)."""

    subject: str
    body: str
    html: str


def local_time(at_us: int, zone: tzinfo) -> str:
    """``at_us`` in ``zone``: ``2026-11-28 17:30:05 CET``."""
    moment = datetime.fromtimestamp(units.to_seconds(at_us), zone)
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def zone_text(zone: str, description: str | None) -> str:
    """The ``$zone`` of a message: the zone's number and description, '' when it has none."""
    return f"{zone} {description}" if zone and description else ""


def _fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with its placeholders filled in; a line whose placeholders all come out empty
    (a zone the event has not) is left out."""
    lines = []
    for template, used in _lines(text):
        if used and not any(values.get(name) for name in used):
            continue
        lines.append(template.safe_substitute(values))
    return "\n".join(lines)


@lru_cache(maxsize=256)
def _lines(text: str) -> tuple[tuple[Template, tuple[str, ...]], ...]:
    """A template's lines, each with the placeholders it uses (read once a template)."""
    templates = map(Template, text.splitlines())
    return tuple((template, tuple(template.get_identifiers())) for template in templates)


def render(templates: Templates, occurrence: Occurrence, zone: tzinfo) -> Message:
    """The message of ``occurrence`` from a kind's and channel's ``templates``, its time in
    ``zone`` (the account's); the subject is header-safe, every value on one line, the HTML part
    escaped."""
    o = occurrence
    values = {
        "account": text_safe(o.account),
        "text": text_safe(o.text),
        "name": text_safe(o.name),
        "zone": text_safe(o.zone),
        "time": local_time(o.at_us, zone),
    }
    subject = header_safe(_fill(templates.subject, values))[:SUBJECT_MAX]
    body = _fill(templates.body, values).strip("\n")
    escaped = html.escape(body).replace("\n", "<br>\n")
    page = f"<html><body><p>{escaped}</p></body></html>"
    return Message(subject, body, page)
