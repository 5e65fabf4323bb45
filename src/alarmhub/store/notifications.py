"""Notifications in the store (decisions section 13): the messages queued in the transaction
that publishes what they tell of (:func:`queue_events` from the outbox of events,
:func:`queue_signals` for the openings and closings routing sends to history), rendered there
(the station's templates, the account's name and time zone, the zone's description), one for
each subscribed contact and channel, each in its lane (the contact's and the channel's,
:mod:`alarmhub.store.lanes`) so that a recipient's messages go out in order; the log; the
gateways (their password or secret encrypted with the station's key, never shown); the
station's templates.

Nothing is read when no contact subscribes to anything: publishers pass the kinds subscribed to
from routing's cache (:class:`~alarmhub.store.provisioning_cache.ProvisioningCache`, reloaded
when the response data changes), or :func:`subscribed_kinds` reads them in one small query.
Routing, the writer's hot path, also passes its :class:`Queueing`: the subscribed contacts of
the accounts it met (kept in its cache until the response data changes) and its bulk insert.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from datetime import UTC, tzinfo
from typing import Any, NamedTuple

import orjson
from cryptography.fernet import Fernet
from sqlalchemy import Connection, and_, delete, func, insert, select

from alarmhub import secret_key
from alarmhub.core import notifications as rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.notifications import Templates
from alarmhub.store import lanes, schema
from alarmhub.store.alarm_response import PHONE_COLUMNS, chunks
from alarmhub.store.notification_rendering import subjects
from alarmhub.store.response import upsert

NOTE = schema.notification.c
GATEWAY = schema.notify_gateway.c
TEMPLATE = schema.notify_template.c
CONTACT = schema.contact.c
LOG_LIMIT = 100
ERROR_MAX = 200


def subscribed_kinds(conn: Connection) -> frozenset[str]:
    """The kinds some contact subscribes to by some channel (empty: nobody is notified)."""
    rows = conn.execute(
        select(CONTACT.notify).where(CONTACT.notify != "", CONTACT.notify_by != "").distinct()
    ).scalars()
    return frozenset(kind for notify in rows for kind in notify.split())


def may_notify(event_kind: str) -> bool:
    """Whether an event of this kind may notify someone (its data says whether it does)."""
    return event_kind in rules.NOTIFYING_EVENTS


class Told(NamedTuple):
    """What a message tells of, before it is rendered: its kind, the account, the HIST_TEXT,
    when, the zone and area ('' when none), and what it comes from (an event, an incident)."""

    kind: str
    account: str
    text: str
    at_us: int
    zone: str = ""
    area: str = ""
    event_id: int | None = None
    incident_number: int | None = None


Recipient = tuple[int, frozenset[str], list[tuple[str, str]]]
"""A subscribed contact: its id, its kinds, and its channels each with where it goes."""

COLUMNS = ("contact_id", "account_number", "kind", "channel", "recipient", "subject", "body",
           "html", "hist_text", "zone", "area", "at_us", "event_id", "incident_number", "state",
           "attempts", "due_us", "queued_us")  # fmt: skip
"""The columns a message is queued with, in the table's order (a bulk insert's rows)."""
_LANE = tuple(COLUMNS.index(c) for c in ("contact_id", "channel", "due_us"))


class Queueing(NamedTuple):
    """What a publisher that queues often keeps between transactions: each account's
    subscribed contacts as read (``known``; the caller empties it when the response data
    changes), a bulk insert of rows in :data:`COLUMNS` order (``insert_rows``), and the zone
    and area of the alarms it has just written (``zones``, by alarm id: not read again)."""

    known: MutableMapping[str, list[Recipient]]
    insert_rows: Callable[[Connection, Sequence[tuple[Any, ...]]], object]
    zones: Mapping[int, tuple[str, str]]


def queue_events(
    conn: Connection,
    kinds: frozenset[str],
    published: Iterable[tuple[int, str, str, str, int]],
    via: Queueing | None = None,
) -> None:
    """Queue the messages of events just published, (event id, kind, account, body, time), to
    the contacts subscribed to their kinds (``kinds``: those anyone subscribes to)."""
    if not kinds:
        return
    told: list[Told] = []
    alarms: dict[int, int] = {}  # alarm id: its place in told, to find its zone
    for event_id, kind, account, body, at_us in published:
        if not account or not may_notify(kind):
            continue
        data = orjson.loads(body)["data"]
        which = rules.event_kind(kind, account, data)
        if which is None or which not in kinds:
            continue
        alarm_id = data.get("alarm_id")
        zone, area = "", ""
        if alarm_id is not None:
            if via is not None and alarm_id in via.zones:
                zone, area = via.zones[alarm_id]
            else:
                alarms[int(alarm_id)] = len(told)
        told.append(Told(which, account, rules.event_text(kind, data), at_us, zone, area,
                         event_id=event_id, incident_number=alarm_id))  # fmt: skip
    if alarms:  # the zone of each alarm not at hand (written before its event)
        A = schema.alarm.c
        for chunk in chunks(sorted(alarms)):
            for alarm_id, zone, area in conn.execute(
                select(A.alarm_id, A.zone, A.area).where(A.alarm_id.in_(list(chunk)))
            ):
                n = alarms[int(alarm_id)]
                told[n] = told[n]._replace(zone=zone or "", area=area or "")
    queue(conn, told, via)


def queue_signals(
    conn: Connection,
    kinds: frozenset[str],
    history: Iterable[tuple[str, int, int, str, str, str, str, str]],
    via: Queueing | None = None,
) -> None:
    """Queue the messages of signals just routed to history, (account, incident number, time,
    code, area, zone, HIST_TEXT, path): the openings and closings (``kinds``: those anyone
    subscribes to)."""
    if rules.OPENCLOSE not in kinds:
        return
    told = [
        Told(rules.OPENCLOSE, account, text, at_us, zone, area, incident_number=incident)
        for account, incident, at_us, code, area, zone, text, path in history
        if account and rules.signal_kind(code, path) == rules.OPENCLOSE
    ]
    queue(conn, told, via)


def queue(conn: Connection, told: Sequence[Told], via: Queueing | None = None) -> None:
    """Queue a message to every contact of each account subscribed to its kind, by each channel
    it chose, due at once; and feed their lanes (rendered when sent, its time in the account's
    zone, else in the station's)."""
    if not told:
        return
    accounts = sorted({t.account for t in told})
    recipients: Mapping[str, Sequence[Recipient]]
    if via is None:
        recipients = _recipients(conn, accounts)
    else:
        if unknown := [a for a in accounts if a not in via.known]:
            read = _recipients(conn, unknown)
            via.known.update((a, read.get(a, [])) for a in unknown)
        recipients = via.known
    if recipients:
        send(conn, told, recipients, insert_rows=via.insert_rows if via else None)


def send(
    conn: Connection,
    told: Sequence[Told],
    recipients: Mapping[str, Sequence[Recipient]],
    now_us: int | None = None,
    insert_rows: Callable[[Connection, Sequence[tuple[Any, ...]]], object] | None = None,
) -> int:
    """Queue the messages of ``told`` to the ``recipients`` of each account (those whose kinds
    hold the message's), each by its channels, due at once; feed their lanes. Each is written
    unrendered, with what it is rendered from when it is taken (:mod:`alarmhub.store.
    notification_rendering`): nothing else is read here. Queued ``now_us`` when given (an
    operator's message about an older alarm), else when told of; written by ``insert_rows``
    (rows in :data:`COLUMNS` order) when given. How many were queued."""
    rows: list[tuple[Any, ...]] = []
    for t in told:
        at_us = t.at_us if now_us is None else now_us
        for contact_id, notify, channels in recipients.get(t.account, ()):
            if t.kind not in notify:
                continue
            for channel, to in channels:
                rows.append((contact_id, t.account, t.kind, channel, to, "", "", "", t.text,
                             t.zone, t.area, t.at_us, t.event_id, t.incident_number,
                             rules.QUEUED, 0, at_us, at_us))  # fmt: skip
    if not rows:
        return 0
    if insert_rows is not None:
        insert_rows(conn, rows)
    else:
        named = [dict(zip(COLUMNS, r, strict=True)) for r in rows]
        conn.execute(insert(schema.notification), named)
    lanes.feed(conn, rules.LANES, (tuple(r[i] for i in _LANE) for r in rows))
    return len(rows)


def _recipients(conn: Connection, accounts: Sequence[str]) -> dict[str, list[Recipient]]:
    """The contacts of ``accounts`` subscribed to some kind by some channel."""
    phones = [c for number, kind in PHONE_COLUMNS for c in (CONTACT[number], CONTACT[kind])]
    found: dict[str, list[Recipient]] = {}
    for chunk in chunks(accounts):
        for row in conn.execute(
            select(CONTACT.contact_id, CONTACT.account_number, CONTACT.email, CONTACT.notify,
                   CONTACT.notify_by, *phones)
            .where(CONTACT.account_number.in_(list(chunk)), CONTACT.notify != "",
                   CONTACT.notify_by != "")
            .order_by(CONTACT.contact_id)
        ).mappings():  # fmt: skip
            channels = []
            for channel in row["notify_by"].split():
                to = row["email"] if channel == rules.EMAIL else mobile(row)
                if to:
                    channels.append((channel, to))
            found.setdefault(row["account_number"], []).append(
                (int(row["contact_id"]), frozenset(row["notify"].split()), channels)
            )
    return found


def mobile(row: Any) -> str:
    """A contact's first mobile phone number ('' when it has none)."""
    for number, kind in PHONE_COLUMNS:
        if row[number] and row[kind] == "mobile":
            return str(row[number])
    return ""


# the log ---------------------------------------------------------------------------------------


def log(
    conn: Connection, account: str | None = None, limit: int = LOG_LIMIT, station: tzinfo = UTC
) -> list[dict[str, Any]]:
    """Messages, newest first (of one account, if given): to whom, by which channel, their
    state and attempts, the subject (a queued message's as it would be sent now, its time in
    the account's zone, else in ``station``'s); never the gateway's secrets (they are not
    here)."""
    query = (
        select(NOTE.notification_id, NOTE.account_number, NOTE.contact_id, NOTE.kind,
               NOTE.channel, NOTE.recipient, NOTE.subject, NOTE.state, NOTE.attempts,
               NOTE.due_us, NOTE.last_error, NOTE.queued_us, NOTE.sent_us, NOTE.event_id,
               NOTE.incident_number, NOTE.digest_id, NOTE.body, NOTE.hist_text, NOTE.zone,
               NOTE.area, NOTE.at_us)
        .order_by(NOTE.notification_id.desc())
        .limit(limit)
    )  # fmt: skip
    if account is not None:
        query = query.where(NOTE.account_number == account)
    rows = conn.execute(query).all()
    rendered = subjects(conn, rows, station)
    hidden = ("notification_id", "account_number", "recipient", "body", "hist_text", "zone",
              "area", "at_us")  # fmt: skip
    return [
        {"id": r.notification_id, "account": r.account_number, "to": r.recipient,
         **{k: rendered.get(r.notification_id, v) if k == "subject" else v
            for k, v in r._mapping.items() if k not in hidden}}
        for r in rows
    ]  # fmt: skip


# gateways --------------------------------------------------------------------------------------


def set_smtp(
    conn: Connection, key: Fernet, url: str, sender: str, starttls: bool, user: str,
    password: str | None, now_us: int,
) -> None:  # fmt: skip
    """Set the e-mail gateway: an SMTP server (``smtps://``: implicit TLS; else STARTTLS when
    asked), the sender, the user and password (encrypted)."""
    sender = sender.strip()
    problem = rules.smtp_problem(url, sender)
    if problem:
        raise ProvisioningError(problem)
    if url.startswith("smtps://") and starttls:
        raise ProvisioningError("smtps:// is implicit TLS already: no --starttls with it")
    tls = rules.IMPLICIT_TLS if url.startswith("smtps://") else rules.STARTTLS if starttls else ""
    _set_gateway(conn, key, rules.EMAIL, url, sender, "", tls, user, password, now_us)


def set_sms(
    conn: Connection, key: Fernet, url: str, fmt: str, sender: str, user: str,
    password: str | None, now_us: int,
) -> None:  # fmt: skip
    """Set the SMS gateway: an HTTP URL, its format (``twilio``, ``json``), the sender's
    number, and the user and password of HTTP basic authentication (encrypted)."""
    sender = sender.strip()
    problem = rules.sms_problem(url, fmt) or (
        "the SMS sender holds a control character" if rules.header_safe(sender) != sender else None
    )
    if problem:
        raise ProvisioningError(problem)
    _set_gateway(conn, key, rules.SMS, url, sender, fmt, "", user, password, now_us)


def _set_gateway(
    conn: Connection, key: Fernet, channel: str, url: str, sender: str, fmt: str, tls: str,
    user: str, password: str | None, now_us: int,
) -> None:  # fmt: skip
    if rules.header_safe(user) != user.strip() or len(user) > 200:
        raise ProvisioningError("the gateway's user holds a control character or is too long")
    secret = secret_key.encrypt(key, password) if password else None
    row = {"channel": channel, "url": url, "sender": sender, "format": fmt, "tls": tls,
           "username": user.strip(), "secret_encrypted": secret, "changed_us": now_us}  # fmt: skip
    upsert(conn, schema.notify_gateway, [row], ["channel"])


class Gateway(NamedTuple):
    """A gateway as a sender uses it, its password or secret decrypted ('' when none)."""

    channel: str
    url: str
    sender: str
    format: str
    tls: str
    user: str
    password: str


def gateway(conn: Connection, key: Fernet, channel: str) -> Gateway | None:
    """The gateway of ``channel`` with its secret, for the sender (never to be shown)."""
    row = conn.execute(
        select(schema.notify_gateway).where(GATEWAY.channel == channel)
    ).mappings().first()  # fmt: skip
    if row is None:
        return None
    password = secret_key.decrypt(key, row["secret_encrypted"]) if row["secret_encrypted"] else ""
    return Gateway(channel, row["url"], row["sender"], row["format"], row["tls"],
                   row["username"], password)  # fmt: skip


def gateways(conn: Connection) -> list[dict[str, Any]]:
    """The gateways as ``notify status`` shows them: never a password, only whether there is
    one; with the messages queued and failed of each channel."""
    counts: dict[tuple[str, str], int] = {}
    for channel, state, n in conn.execute(
        select(NOTE.channel, NOTE.state, func.count())
        .where(NOTE.state != rules.SENT)
        .group_by(NOTE.channel, NOTE.state)
    ):
        counts[channel, state] = int(n)
    found = {
        r["channel"]: {
            "channel": r["channel"], "url": r["url"], "from": r["sender"],
            "format": r["format"] or None, "tls": r["tls"] or None, "user": r["username"],
            "has_password": r["secret_encrypted"] is not None, "changed_us": r["changed_us"],
        }
        for r in conn.execute(select(schema.notify_gateway)).mappings()
    }  # fmt: skip
    return [
        {"channel": channel, "configured": channel in found, **found.get(channel, {}),
         "queued": counts.get((channel, rules.QUEUED), 0),
         "failed": counts.get((channel, rules.FAILED), 0)}
        for channel in rules.CHANNELS
    ]  # fmt: skip


# templates -------------------------------------------------------------------------------------


def template(conn: Connection, kind: str, channel: str) -> tuple[Templates, bool]:
    """A kind's and channel's templates and whether they are the station's own."""
    _checked_key(kind, channel)
    row = conn.execute(
        select(TEMPLATE.subject, TEMPLATE.body).where(
            and_(TEMPLATE.kind == kind, TEMPLATE.channel == channel)
        )
    ).first()
    if row is None:
        return rules.DEFAULTS[kind, channel], False
    return Templates(row.subject, row.body), True


def set_template(
    conn: Connection, kind: str, channel: str, subject: str | None, body: str | None, now_us: int
) -> Templates:
    """Change a kind's and channel's templates (what is not given stays); checked first."""
    current, _ = template(conn, kind, channel)
    wanted = Templates(current.subject if subject is None else subject,
                       current.body if body is None else body)  # fmt: skip
    problem = rules.template_problem(channel, wanted)
    if problem:
        raise ProvisioningError(problem)
    row = {"kind": kind, "channel": channel, "subject": wanted.subject, "body": wanted.body,
           "changed_us": now_us}  # fmt: skip
    upsert(conn, schema.notify_template, [row], ["kind", "channel"])
    return wanted


def reset_template(conn: Connection, kind: str, channel: str) -> Templates:
    """Go back to the default templates of a kind and channel."""
    _checked_key(kind, channel)
    conn.execute(
        delete(schema.notify_template).where(
            and_(TEMPLATE.kind == kind, TEMPLATE.channel == channel)
        )
    )
    return rules.DEFAULTS[kind, channel]


def _checked_key(kind: str, channel: str) -> None:
    problem = rules.key_problem(kind, channel)
    if problem:
        raise ProvisioningError(problem)
