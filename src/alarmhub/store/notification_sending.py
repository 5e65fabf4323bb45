"""The sender's side of the notifications' queue (:mod:`alarmhub.store.notifications` writes
it), for the notify channel of the one delivery worker (:mod:`alarmhub.outbound.notify`): the
lanes that are due (one for each contact and channel, :mod:`alarmhub.store.lanes`; on a shared
database claimed by one node for a while), the next send of each (its first queued message, or
in a storm the digest of all those queued: :mod:`alarmhub.core.digest`), one at a time so that
a recipient's messages go out in order; each attempt recorded (sent, to be retried at the time
the retry schedule gives, or failed); the lanes settled (due when their first message is, and
the window allows); a failed or sent message queued again (a resend).

A lane whose first message waits for its retry waits alone: the others go on. A message whose
contact was removed meanwhile is still sent, to the address it was queued with: what was
queued while the contact was subscribed is never lost silently. A message is rendered as it is
taken (:mod:`alarmhub.store.notification_rendering`: what it needs read once for all the lanes
taken), and what was sent is stored with its outcome.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Connection, Update, bindparam, insert, select, update

from alarmhub.clock import now_us as clock_us
from alarmhub.core import digest
from alarmhub.core import notifications as rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.store import lanes, schema
from alarmhub.store.notification_rendering import Reference, reference, render_rows

NOTE = schema.notification.c
LANE = lanes.LANE
CHANNEL = rules.LANES
ERROR_MAX = 200
RECENT_READ = 4 * digest.RATE
"""A lane's last sends read to apply the rate (by id, newest first: a few more than the rate,
as a digest's id is newer than the messages queued before its send)."""


def due_lanes(
    conn: Connection,
    now_us: int,
    limit: int,
    *,
    held: Collection[int] = (),
    claim: tuple[str, int] | None = None,
) -> list[lanes.Lane]:
    """Up to ``limit`` lanes that are due, not ``held`` by this node (nor claimed by another);
    ``claim=(node, lease_us)`` on a shared database (in a write transaction) claims each until
    ``now_us + lease_us``. Without it (the only node, SQLite) this is a read."""
    found = lanes.due(conn, CHANNEL, now_us, limit + len(held), lock=claim is not None)
    chosen = [n for n in found if n.lane_id not in held][:limit]
    if claim is not None:
        node, lease_us = claim
        lanes.claim(conn, [n.lane_id for n in chosen], node, now_us + lease_us)
    return chosen


@dataclass(frozen=True, slots=True)
class Claimed:
    """A message taken by this node (:class:`~alarmhub.outbound.delivery.Item`): what one
    attempt sends, and to whom. A digest (:mod:`alarmhub.core.digest`) is taken as its first
    message's (``delivery_id``), rendered anew, carrying every message of ``collapsed``."""

    delivery_id: int  # the message's id
    lane_id: int
    target_id: int  # the contact
    attempts: int
    lease_until_us: int | None
    channel: str
    account: str
    to: str
    subject: str
    body: str
    html: str
    collapsed: tuple[int, ...] = ()  # a digest: the messages it carries, the first included
    rendered: tuple[Rendered, ...] = ()  # the messages rendered as taken: kept when recorded

    @classmethod
    def from_wire(cls, fields: dict[str, Any]) -> Claimed:
        """A message as a frame carried it (its tuples as lists)."""
        return cls(**{**fields, "collapsed": tuple(fields["collapsed"]),
                      "rendered": _rendered_from_wire(fields["rendered"])})  # fmt: skip


Rendered = tuple[int, str, str, str]
"""A message rendered as it was taken: its id, subject, body and HTML part (stored with its
outcome, so that the log shows what was sent)."""


class Taken(NamedTuple):
    """What :func:`take` hands out: each lane's next send (a chain of one), and the lanes that
    hand out nothing now (to :func:`settle`)."""

    chains: list[list[Claimed]]
    idle: list[int]


_LANE_QUEUED = (
    select(NOTE.notification_id, NOTE.contact_id, NOTE.kind, NOTE.channel, NOTE.account_number,
           NOTE.recipient, NOTE.subject, NOTE.body, NOTE.html, NOTE.hist_text, NOTE.zone,
           NOTE.area, NOTE.at_us, NOTE.attempts, NOTE.due_us, NOTE.queued_us)
    .where(
        NOTE.contact_id == bindparam("contact"),
        NOTE.channel == bindparam("channel"),
        NOTE.state == rules.QUEUED,
    )
    .order_by(NOTE.notification_id)
    .limit(bindparam("read"))
)  # fmt: skip
_LANE_SENT = (
    select(NOTE.sent_us)
    .where(
        NOTE.contact_id == bindparam("contact"),
        NOTE.channel == bindparam("channel"),
        NOTE.state == rules.SENT,
        NOTE.digest_id.is_(None),
    )
    .order_by(NOTE.notification_id.desc())
    .limit(RECENT_READ)
)
"""A lane's last sends (a message, or a digest; not the messages a digest carried)."""


def _sends(conn: Connection, lane: lanes.Lane) -> list[int]:
    rows = conn.execute(_LANE_SENT, {"contact": lane.target_id, "channel": lane.key})
    return [t for t in rows.scalars() if t is not None]


def take(
    conn: Connection,
    now_us: int,
    chosen: Sequence[lanes.Lane],
    limit: int,
    lease_until_us: int | None = None,
    station: tzinfo = UTC,
) -> Taken:
    """The next send of each of the ``chosen`` lanes (from :func:`due_lanes`) whose first
    queued message is due by ``now_us`` and whose window allows one (:mod:`alarmhub.core.
    digest`): that message, or the digest of all those queued (its times in the account's time
    zone, else ``station``'s); ``limit`` lanes at most."""
    idle: list[int] = []
    sends: list[tuple[lanes.Lane, list[Any], bool]] = []  # a lane's message(s), a digest?
    for lane in chosen:
        if len(sends) >= limit:
            idle.append(lane.lane_id)
            continue
        read = {"contact": lane.target_id, "channel": lane.key}
        first = conn.execute(_LANE_QUEUED, read | {"read": 1}).first()
        if first is None or first.due_us > now_us:
            idle.append(lane.lane_id)
            continue
        sent = _sends(conn, lane)
        queued = digest.plan(sent, 2, now_us)
        if queued == digest.DIGEST:  # more than one may be queued: count them
            lane_rows = conn.execute(_LANE_QUEUED, read | {"read": digest.DIGEST_MAX}).all()
            queued = digest.plan(sent, len(lane_rows), now_us)
        if queued == digest.WAIT:
            idle.append(lane.lane_id)
        elif queued == digest.ONE:
            sends.append((lane, [first], False))
        else:
            sends.append((lane, list(lane_rows), True))
    # rendered now, all at once (names, zones, descriptions, templates read once)
    taken = [r for _, rows, _ in sends for r in rows]
    digests = [rows[0].account_number for _, rows, collapsed in sends if collapsed]
    ref = reference(conn, taken, digests) if taken else None
    rendered = render_rows(conn, taken, station, ref)
    chains: list[list[Claimed]] = []
    for lane, rows, collapsed in sends:
        made = tuple(_rendered(r.notification_id, rendered[r.notification_id]) for r in rows
                     if r.notification_id in rendered)  # fmt: skip
        texts = {i: (subject, body, html) for i, subject, body, html in made}
        if collapsed:
            assert ref is not None
            chains.append([_digest(ref, lane, rows, texts, lease_until_us, station, made)])
            continue
        first = rows[0]
        subject, body, html = texts.get(first.notification_id,
                                        (first.subject, first.body, first.html))  # fmt: skip
        chains.append([Claimed(first.notification_id, lane.lane_id, first.contact_id,
                               first.attempts, lease_until_us, first.channel,
                               first.account_number, first.recipient, subject, body, html,
                               rendered=made)])  # fmt: skip
    return Taken(chains, idle)


def _rendered(notification_id: int, message: rules.Message) -> Rendered:
    return (notification_id, message.subject, message.body, message.html)


def _digest(
    read: Reference,
    lane: lanes.Lane,
    rows: Sequence[Any],
    texts: dict[int, tuple[str, str, str]],
    lease_until_us: int | None,
    station: tzinfo,
    made: tuple[Rendered, ...],
) -> Claimed:
    first = rows[0]
    account = first.account_number
    zone = read.zones.get(account, station)
    lines = []
    for r in rows:
        subject, body, _ = texts.get(r.notification_id, (r.subject, r.body, r.html))
        lines.append(digest.Collapsed(r.queued_us, subject if r.channel == rules.EMAIL else body))
    message = digest.render(account, read.names.get(account, ""), lane.key, lines, zone)
    return Claimed(first.notification_id, lane.lane_id, first.contact_id, first.attempts,
                   lease_until_us, first.channel, account, first.recipient, message.subject,
                   message.body, message.html,
                   tuple(r.notification_id for r in rows), made)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one attempt ended: the message's ``state`` after it (queued again, sent, failed),
    the ``attempts`` it has had, why it did not go (short, no secret) and when it is due again
    (queued). A digest's outcome carries it (``sent``: its message) and every message in it."""

    notification_id: int
    state: str
    attempts: int
    error: str | None = None
    due_us: int | None = None
    sent: Claimed | None = None  # a digest that ended (sent, or failed for good)
    ended_us: int | None = None  # when the attempt ended (a send's time; else when recorded)
    rendered: tuple[Rendered, ...] = ()  # the messages rendered as taken (kept once ended)

    @classmethod
    def from_wire(cls, fields: dict[str, Any]) -> Outcome:
        """An outcome as a frame carried it (its tuples as lists, its digest as fields)."""
        sent = fields["sent"]
        return cls(**{**fields, "sent": None if sent is None else Claimed.from_wire(sent),
                      "rendered": _rendered_from_wire(fields["rendered"])})  # fmt: skip


def _rendered_from_wire(rows: Sequence[Sequence[Any]]) -> tuple[Rendered, ...]:
    return tuple((int(i), str(subject), str(body), str(html)) for i, subject, body, html in rows)


def _set_by_id(*columns: str, where: tuple[ColumnElement[bool], ...] = ()) -> Update:
    """An UPDATE of the message ``b_id`` (when ``where`` holds too) setting each of ``columns``
    to its parameter ``b_`` + the column's name (executed with a row of parameters a message)."""
    values = {c: bindparam(f"b_{c}", type_=NOTE[c].type) for c in columns}
    return (
        update(schema.notification)
        .where(NOTE.notification_id == bindparam("b_id"), *where)
        .values(values)
    )


_RECORD = _set_by_id("state", "attempts", "last_error", "due_us", "sent_us")
_TEXT = _set_by_id("subject", "body", "html")
_CARRIED = _set_by_id(
    "state", "sent_us", "digest_id", "due_us", "last_error", where=(NOTE.state == rules.QUEUED,)
)


def record(conn: Connection, outcomes: Sequence[Outcome], now_us: int) -> None:
    """Record attempts (their lanes are settled after: :func:`settle`). A digest that ended is
    a message of its own in the log (kind ``digest``), and each message it carried takes its
    state, naming it (``digest_id``); a digest that is to be retried is its first message's
    retry (it is made anew then). A statement for each of these, whatever the count."""
    states = [
        {"b_id": o.notification_id, "b_state": o.state, "b_attempts": o.attempts,
         "b_last_error": _error(o.error),
         "b_due_us": o.due_us if o.due_us is not None else now_us,
         "b_sent_us": _sent_us(o, now_us)}
        for o in outcomes if o.sent is None or o.state == rules.QUEUED
    ]  # fmt: skip
    if states:
        conn.execute(_RECORD, states)
    digests = [(o, o.sent) for o in outcomes if o.sent is not None and o.state != rules.QUEUED]
    if digests:
        _record_digests(conn, digests, now_us)
    texts = [
        {"b_id": i, "b_subject": subject, "b_body": body, "b_html": html}
        for o in outcomes if o.state != rules.QUEUED
        for i, subject, body, html in (o.rendered or (o.sent.rendered if o.sent else ()))
    ]  # fmt: skip
    if texts:  # what was sent (a message to be retried is rendered again then)
        conn.execute(_TEXT, texts)


_STILL_QUEUED = select(NOTE.notification_id).where(
    NOTE.notification_id.in_(bindparam("ids", expanding=True)), NOTE.state == rules.QUEUED
)
_MADE = insert(schema.notification).returning(NOTE.notification_id, sort_by_parameter_order=True)


def _record_digests(conn: Connection, ended: list[tuple[Outcome, Claimed]], now_us: int) -> None:
    """Digests that ended (sent, or failed for good): their messages in the log, and the state
    of those each carried. A digest whose first message is no longer queued was recorded
    already (a recording made again, its answer lost): it is not made twice."""
    firsts = [o.notification_id for o, _ in ended]
    queued = set(conn.execute(_STILL_QUEUED, {"ids": firsts}).scalars())
    ended = [(o, d) for o, d in ended if o.notification_id in queued]
    if not ended:
        return
    made = conn.execute(_MADE, [
        {"contact_id": d.target_id, "account_number": d.account, "kind": digest.KIND,
         "channel": d.channel, "recipient": d.to, "subject": d.subject, "body": d.body,
         "html": d.html, "state": o.state, "attempts": o.attempts, "due_us": now_us,
         "last_error": _error(o.error), "queued_us": now_us, "sent_us": _sent_us(o, now_us)}
        for o, d in ended
    ])  # fmt: skip
    digest_ids = made.scalars().all()
    conn.execute(_CARRIED, [
        {"b_id": carried, "b_state": o.state, "b_sent_us": _sent_us(o, now_us),
         "b_digest_id": digest_id, "b_due_us": now_us, "b_last_error": _error(o.error)}
        for (o, d), digest_id in zip(ended, digest_ids, strict=True)
        for carried in d.collapsed
    ])  # fmt: skip


def _sent_us(outcome: Outcome, now_us: int) -> int | None:
    """When a message was sent: its attempt's end (the rate of :mod:`alarmhub.core.digest` is
    kept on these times), None when it was not."""
    if outcome.state != rules.SENT:
        return None
    return outcome.ended_us if outcome.ended_us is not None else now_us


def _error(error: str | None) -> str | None:
    return rules.header_safe(error)[:ERROR_MAX] if error else None


_FIRST_QUEUED = lanes.FirstDue(
    NOTE.due_us, NOTE.contact_id, NOTE.channel, NOTE.state == rules.QUEUED, NOTE.notification_id
)


def _first_due(conn: Connection, chosen: Sequence[lanes.Lane], now: int) -> dict[int, int]:
    """When each lane may send next: its first queued message's due time, or later when its
    window is full at ``now`` (:func:`alarmhub.core.digest.reopens_us`)."""
    dues = _FIRST_QUEUED(conn, chosen)
    for lane in chosen:
        if lane.lane_id in dues:
            reopens = digest.reopens_us(_sends(conn, lane), now)
            if reopens is not None:
                dues[lane.lane_id] = max(dues[lane.lane_id], reopens)
    return dues


def settle(
    conn: Connection, lane_ids: Collection[int], *, free: bool = True, now_us: int | None = None
) -> set[int]:
    """Make lanes due when their next send may go (:func:`_first_due`, as of ``now_us``, else
    the clock's), after the outcomes are recorded, and (``free``) free their claims; the lanes
    settled."""
    now = clock_us() if now_us is None else now_us
    return lanes.settle(conn, lane_ids, lambda c, chosen: _first_due(c, chosen, now), free=free)


def release(conn: Connection, node: str) -> None:
    """Give back every notification lane ``node`` holds (as it stops)."""
    lanes.release(conn, node, CHANNEL)


def resend(conn: Connection, notification_id: int, now_us: int) -> None:
    """Queue a failed (or sent) message again, from its first attempt, due now (one a digest
    carried goes on its own: it names no digest any more)."""
    row = conn.execute(
        select(NOTE.state, NOTE.contact_id, NOTE.channel).where(
            NOTE.notification_id == notification_id
        )
    ).first()
    if row is None:
        raise ProvisioningError(f"no message {notification_id}")
    if row.state == rules.QUEUED:
        raise ProvisioningError(f"message {notification_id} is queued already")
    conn.execute(
        update(schema.notification)
        .where(NOTE.notification_id == notification_id)
        .values(
            state=rules.QUEUED,
            attempts=0,
            due_us=now_us,
            sent_us=None,
            last_error=None,
            digest_id=None,
        )
    )
    lanes.feed(conn, CHANNEL, [(row.contact_id, row.channel, now_us)])
    settle(conn, lanes.ids(conn, CHANNEL, [(row.contact_id, row.channel)]), free=False,
           now_us=now_us)  # fmt: skip
