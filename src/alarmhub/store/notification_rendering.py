"""Notifications rendered from what they tell of (decisions section 13): a message is queued
unrendered, with the facts to render it from (the HIST_TEXT, the zone and area, when), and is
rendered by the delivery worker when it is taken (:mod:`alarmhub.store.notification_sending`),
or on the fly where a queued message is shown (the log, an alarm's messages): the station's
templates, the account's name and time zone, the zone's description, read once for all the
messages rendered together, then :func:`alarmhub.core.notifications.render` (the one
rendering). A message rendered and recorded keeps its text (what was sent); one queued before
messages were rendered late has no facts, and its text is its own already.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import suppress
from datetime import UTC, tzinfo
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Connection, select, tuple_

from alarmhub.core import notifications as rules
from alarmhub.core.notifications import Message, Occurrence, Templates
from alarmhub.core.response import zone_description
from alarmhub.store import schema
from alarmhub.store.alarm_response import chunks

TEMPLATE = schema.notify_template.c


def unrendered(row: Any) -> bool:
    """Whether a message row (its ``body`` and ``at_us``) waits to be rendered."""
    return row.at_us is not None and not row.body


class Reference(NamedTuple):
    """What messages are rendered with, read once for those rendered together: the accounts'
    names and time zones, the zones' descriptions, the station's templates."""

    names: dict[str, str]
    zones: dict[str, tzinfo]
    descriptions: dict[tuple[str, str], dict[tuple[str, str], str]]
    templates: dict[tuple[str, str], Templates]


def reference(conn: Connection, rows: Sequence[Any], accounts: Iterable[str] = ()) -> Reference:
    """What the ``rows`` that wait to be rendered need, and the names and zones of
    ``accounts`` too (a digest's)."""
    waiting = [r for r in rows if unrendered(r)]
    wanted = sorted({r.account_number for r in waiting} | set(accounts))
    names, zones = account_names_and_zones(conn, wanted)
    described = _descriptions(conn, [(r.account_number, r.zone) for r in waiting if r.zone])
    return Reference(names, zones, described, templates_all(conn) if waiting else {})


def render_rows(
    conn: Connection, rows: Iterable[Any], station: tzinfo = UTC, read: Reference | None = None
) -> dict[int, Message]:
    """The messages of the ``rows`` that wait to be rendered (each with ``notification_id``,
    ``kind``, ``channel``, ``account_number``, ``hist_text``, ``zone``, ``area``, ``at_us``,
    ``body``), by id; the time in the account's zone, else in ``station``'s. Reads what they
    need once (``read`` when given; nothing when none waits)."""
    waiting = [r for r in rows if unrendered(r)]
    if not waiting:
        return {}
    ref = read if read is not None else reference(conn, waiting)
    found: dict[int, Message] = {}
    for r in waiting:
        account = r.account_number
        described = zone_description(ref.descriptions.get((account, r.zone), {}), r.zone, r.area)
        occurrence = Occurrence(account, r.hist_text, int(r.at_us), ref.names.get(account, ""),
                                rules.zone_text(r.zone, described))  # fmt: skip
        template = ref.templates.get((r.kind, r.channel))
        if template is None:  # a kind or channel no longer known: its bare text
            found[r.notification_id] = Message(rules.header_safe(r.hist_text)[: rules.SUBJECT_MAX],
                                               r.hist_text, "")  # fmt: skip
            continue
        message = rules.render(template, occurrence, ref.zones.get(account, station))
        html = message.html if r.channel == rules.EMAIL else ""
        found[r.notification_id] = Message(message.subject, message.body, html)
    return found


def subjects(conn: Connection, rows: Sequence[Any], station: tzinfo = UTC) -> dict[int, str]:
    """The subject of each row that waits to be rendered, as it would be sent now."""
    return {i: m.subject for i, m in render_rows(conn, rows, station).items()}


def account_names_and_zones(
    conn: Connection, accounts: Sequence[str]
) -> tuple[dict[str, str], dict[str, tzinfo]]:
    """The accounts' names, and the time zones of those whose schedule (the whole account's)
    names one."""
    A, S = schema.account.c, schema.schedule.c
    names: dict[str, str] = {}
    zones: dict[str, tzinfo] = {}
    for chunk in chunks(accounts):
        for account, name in conn.execute(
            select(A.account_number, A.company_name).where(A.account_number.in_(list(chunk)))
        ):
            names[account] = name
        for account, name in conn.execute(
            select(S.account_number, S.timezone).where(
                S.account_number.in_(list(chunk)), S.area == "", S.timezone.is_not(None)
            )
        ):
            with suppress(ZoneInfoNotFoundError, ValueError):  # checked when set
                zones[account] = ZoneInfo(name)
    return names, zones


def _descriptions(
    conn: Connection, zones: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], dict[tuple[str, str], str]]:
    """The descriptions of the zones (account, zone) by area, per account and zone."""
    Z = schema.account_zone.c
    found: dict[tuple[str, str], dict[tuple[str, str], str]] = {}
    for chunk in chunks(sorted(set(zones))):
        for account, zone, area, text in conn.execute(
            select(Z.account_number, Z.zone, Z.area, Z.description).where(
                tuple_(Z.account_number, Z.zone).in_(list(chunk))
            )
        ):
            found.setdefault((account, zone), {})[(zone, area)] = text
    return found


def templates_all(conn: Connection) -> dict[tuple[str, str], Templates]:
    """Every kind's and channel's templates: the station's where it set some, else the
    defaults."""
    found = dict(rules.DEFAULTS)
    for kind, channel, subject, body in conn.execute(
        select(TEMPLATE.kind, TEMPLATE.channel, TEMPLATE.subject, TEMPLATE.body)
    ):
        if (kind, channel) in found:
            found[kind, channel] = Templates(subject, body)
    return found
