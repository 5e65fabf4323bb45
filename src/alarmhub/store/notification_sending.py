"""The sender's side of the notifications' queue (:mod:`alarmhub.store.notifications` writes
it): the lanes that are due (one for each contact and channel, :mod:`alarmhub.store.lanes`;
on a shared database claimed by one node for a while), the first queued message of each, taken
one at a time so that a recipient's messages go out in order; each attempt recorded (sent, to
be retried at a time the caller's retry schedule gives, or failed); the lanes settled; a failed
or sent message queued again (a resend).

A lane whose first message waits for its retry waits alone: the others go on.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import BigInteger, Connection, String, bindparam, select, update

from alarmhub.core import notifications as rules
from alarmhub.core.errors import ProvisioningError
from alarmhub.store import lanes, schema

NOTE = schema.notification.c
LANE = lanes.LANE
CHANNEL = rules.LANES
ERROR_MAX = 200


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
    """A message taken by this node: what one attempt sends, and to whom."""

    notification_id: int
    lane_id: int
    contact_id: int
    channel: str
    to: str
    subject: str
    body: str
    html: str
    attempts: int


class Taken(NamedTuple):
    """What :func:`take` hands out: the first message of each lane that may go now, and the
    lanes that hand out nothing now (to :func:`settle`)."""

    messages: list[Claimed]
    idle: list[int]


_FIRST = (
    select(
        NOTE.notification_id, NOTE.contact_id, NOTE.channel, NOTE.recipient, NOTE.subject,
        NOTE.body, NOTE.html, NOTE.attempts, NOTE.due_us,
    )
    .where(
        NOTE.contact_id == bindparam("contact"),
        NOTE.channel == bindparam("channel"),
        NOTE.state == rules.QUEUED,
    )
    .order_by(NOTE.notification_id)
    .limit(1)
)  # fmt: skip


def take(conn: Connection, now_us: int, chosen: Sequence[lanes.Lane]) -> Taken:
    """The first queued message of each of the ``chosen`` lanes (from :func:`due_lanes`) that
    is due by ``now_us``."""
    messages: list[Claimed] = []
    idle: list[int] = []
    for lane in chosen:
        row = conn.execute(_FIRST, {"contact": lane.target_id, "channel": lane.key}).first()
        if row is None or row.due_us > now_us:
            idle.append(lane.lane_id)
            continue
        messages.append(
            Claimed(row.notification_id, lane.lane_id, row.contact_id, row.channel,
                    row.recipient, row.subject, row.body, row.html, row.attempts)
        )  # fmt: skip
    return Taken(messages, idle)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one attempt ended: sent, or why not (short, no secret) and when to try again (None:
    the message has failed for good)."""

    notification_id: int
    sent: bool
    error: str | None = None
    next_attempt_us: int | None = None


def record(conn: Connection, outcomes: Sequence[Outcome], now_us: int) -> None:
    """Record attempts (their lanes are settled after: :func:`settle`)."""
    if not outcomes:
        return
    conn.execute(
        update(schema.notification)
        .where(NOTE.notification_id == bindparam("b_id"))
        .values(
            state=bindparam("b_state", type_=String),
            attempts=NOTE.attempts + 1,
            last_error=bindparam("b_error", type_=String),
            due_us=bindparam("b_due", type_=BigInteger),
            sent_us=bindparam("b_sent", type_=BigInteger),
        ),
        [
            {
                "b_id": o.notification_id,
                "b_state": _state(o),
                "b_error": _error(o.error),
                "b_due": o.next_attempt_us if o.next_attempt_us is not None else now_us,
                "b_sent": now_us if o.sent else None,
            }
            for o in outcomes
        ],
    )


def _state(outcome: Outcome) -> str:
    if outcome.sent:
        return rules.SENT
    return rules.QUEUED if outcome.next_attempt_us is not None else rules.FAILED


def _error(error: str | None) -> str | None:
    return rules.header_safe(error)[:ERROR_MAX] if error else None


_FIRST_DUE = select(
    LANE.lane_id,
    select(NOTE.due_us)
    .where(
        NOTE.contact_id == LANE.target_id,
        NOTE.channel == LANE.lane_key,
        NOTE.state == rules.QUEUED,
    )
    .order_by(NOTE.notification_id)
    .limit(1)
    .scalar_subquery(),
).where(LANE.lane_id.in_(bindparam("lanes", expanding=True)))


def _first_due(conn: Connection, chosen: Sequence[lanes.Lane]) -> dict[int, int]:
    rows = conn.execute(_FIRST_DUE, {"lanes": [n.lane_id for n in chosen]})
    return {lane_id: due for lane_id, due in rows if due is not None}


def settle(conn: Connection, lane_ids: Collection[int], *, free: bool = True) -> set[int]:
    """Make lanes due when their first queued message is, after the outcomes are recorded,
    and (``free``) free their claims; the lanes settled."""
    return lanes.settle(conn, lane_ids, _first_due, free=free)


def release(conn: Connection, node: str) -> None:
    """Give back every notification lane ``node`` holds (as it stops)."""
    lanes.release(conn, node, CHANNEL)


def resend(conn: Connection, notification_id: int, now_us: int) -> None:
    """Queue a failed (or sent) message again, from its first attempt, due now."""
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
        .values(state=rules.QUEUED, attempts=0, due_us=now_us, sent_us=None, last_error=None)
    )
    lanes.feed(conn, CHANNEL, [(row.contact_id, row.channel, now_us)])
    settle(conn, lanes.ids(conn, CHANNEL, [(row.contact_id, row.channel)]), free=False)
