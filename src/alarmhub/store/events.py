"""The outbox of events: written in the transaction of the change each reports (so never lost
by a crash, never there for a change that rolled back) with a delivery to each webhook that
wants it, and read by the event stream. Every writer of events holds the incident counter's
lock (routing, supervision, operators' and the API's actions), so event ids follow the order of
the commits.

Events are kept :data:`KEEP_DAYS` days (at least :data:`KEEP_AT_LEAST_HOURS`, what the event
stream promises to resume over); the writer's housekeeping forgets older ones, and their
webhook deliveries, with :func:`forget`, raising the ``event_forgotten`` counter to the newest
id it deleted, so a reader resuming from an older id can tell that it missed some."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from alarmhub.core import events, units
from alarmhub.store import notifications, schema, webhooks

EVENT = schema.event.c
SEQUENCE = schema.sequence.c
COLUMNS = ("kind", "account_number", "body", "at_us")
"""The columns an event is written with (table order; ``event_id`` is the database's)."""
KEEP_DAYS = 7
KEEP_AT_LEAST_HOURS = 24
FORGOTTEN = "event_forgotten"
"""The counter (table ``sequence``) holding the newest event id ever forgotten."""
FORGET_CHUNK = 5000
"""At most this many events are forgotten by one pass (housekeeping runs every second)."""


def row(kind: str, account: str, data: Mapping[str, Any], at_us: int) -> tuple[Any, ...]:
    """One event as a row of :data:`COLUMNS` (for a bulk insert)."""
    assert kind in events.KINDS, kind
    return (kind, account, orjson.dumps(events.envelope(kind, at_us, data)).decode(), at_us)


def publish(conn: Connection, kind: str, account: str, data: Mapping[str, Any], at_us: int) -> None:
    """Put one event in the outbox."""
    publish_rows(conn, [row(kind, account, data, at_us)])


def publish_rows(
    conn: Connection,
    rows: Sequence[tuple[Any, ...]],
    insert_rows: Callable[[Connection, Sequence[tuple[Any, ...]]], object] | None = None,
    hooks: Sequence[webhooks.Subscribed] | None = None,
    notify: frozenset[str] | None = None,
    queueing: notifications.Queueing | None = None,
) -> None:
    """Put events made by :func:`row` in the outbox, in this order (written by
    ``insert_rows``, such as a prepared bulk insert, if given), with their deliveries to the
    webhooks that want them and the messages to the contacts subscribed to them (``hooks`` and
    ``notify``, the kinds anyone subscribes to, when the caller has them at hand: routing's
    cache; ``queueing``: its subscribed contacts and bulk insert, ``notifications.Queueing``)."""
    if not rows:
        return
    if hooks is None:
        hooks = webhooks.subscribed(conn)
    if notify is None:  # read only for events that may notify (not an operator's actions)
        telling = any(notifications.may_notify(r[0]) for r in rows)
        notify = notifications.subscribed_kinds(conn) if telling else frozenset()
    before = newest(conn) if hooks or notify else 0
    if insert_rows is not None:
        insert_rows(conn, rows)
    else:
        conn.execute(insert(schema.event), [dict(zip(COLUMNS, r, strict=True)) for r in rows])
    if hooks:  # the events just written: the counter's lock keeps out everyone else's
        published = conn.execute(
            select(EVENT.event_id, EVENT.kind, EVENT.account_number, EVENT.at_us)
            .where(EVENT.event_id > before)
            .order_by(EVENT.event_id)
        )
        webhooks.deliver(conn, hooks, published)
    if notify:  # the ids just given, in the order written
        ids = conn.execute(
            select(EVENT.event_id).where(EVENT.event_id > before).order_by(EVENT.event_id)
        ).scalars()
        told = ((event_id, *r) for event_id, r in zip(ids, rows, strict=True))
        notifications.queue_events(conn, notify, told, queueing)


class Event(NamedTuple):
    """An event as read back: its id, kind, account ('' for the station's own) and body."""

    event_id: int
    kind: str
    account_number: str
    body: str


_AFTER = (
    select(EVENT.event_id, EVENT.kind, EVENT.account_number, EVENT.body)
    .where(EVENT.event_id > bindparam("after"))
    .order_by(EVENT.event_id)
    .limit(bindparam("limit"))
)


def after(conn: Connection, event_id: int, limit: int) -> list[Event]:
    """Up to ``limit`` events after ``event_id``, oldest first."""
    return [Event(*r) for r in conn.execute(_AFTER, {"after": event_id, "limit": limit})]


def newest(conn: Connection) -> int:
    """The newest event id in the outbox (0 when it is empty)."""
    return int(conn.execute(select(func.coalesce(func.max(EVENT.event_id), 0))).scalar_one())


def forgotten_through(conn: Connection) -> int:
    """The newest event id forgotten so far (0: none); a reader after an older id missed some."""
    found = conn.execute(select(SEQUENCE.value).where(SEQUENCE.name == FORGOTTEN)).scalar()
    return int(found or 0)


def forget(conn: Connection, now_us: int, keep_days: float = KEEP_DAYS) -> int:
    """Delete up to :data:`FORGET_CHUNK` events older than ``keep_days`` (never fewer than
    :data:`KEEP_AT_LEAST_HOURS` hours) and raise the forgotten counter; how many."""
    keep_us = max(units.hours_us(keep_days * 24), units.hours_us(KEEP_AT_LEAST_HOURS))
    ids: Sequence[int] = list(
        conn.execute(
            select(EVENT.event_id)
            .where(EVENT.at_us < now_us - keep_us)
            .order_by(EVENT.at_us)
            .limit(FORGET_CHUNK)
        ).scalars()
    )
    if not ids:
        return 0
    conn.execute(delete(schema.event).where(EVENT.event_id.in_(ids)))
    webhooks.forget(conn, ids)
    through = max(ids)
    conn.execute(
        update(schema.sequence)
        .where(SEQUENCE.name == FORGOTTEN, SEQUENCE.value < through)
        .values(value=through)
    )
    return len(ids)
