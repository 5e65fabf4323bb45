"""Lanes of durable deliveries, whatever the channel (webhooks, automation outputs): one lane
for each target (a webhook, an output) and key (an account; "" for an output's one lane). A
lane's deliveries go out in order, one at a time; a lane whose first delivery waits for its
retry waits alone, the others go on.

A lane holds when its first pending delivery is due (NULL: nothing is pending), so the worker
reads only the lanes that are due (an index on that time), however long the lanes that wait
are. The channel's store says what a lane's first delivery is (:func:`settle` is given its due
time). On a database shared by several nodes, a node claims the lanes it sends (a lease).

Locks (several nodes): publishing feeds its lanes (their rows locked until it commits); the
worker claims and settles only lanes no one else holds (``SKIP LOCKED``), and settles a lane
only once it holds it, reading its first delivery after that: a delivery published meanwhile
is seen, or its publishing waits for the settling and wakes the lane. The worker never waits
for a lane's lock, so publishing and delivering never deadlock.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import BigInteger, Connection, bindparam, delete, func, or_, select, update
from sqlalchemy.sql import ColumnElement

from alarmhub.store import schema
from alarmhub.store.response import upsert

LANE = schema.delivery_lane.c
KEY = ["channel", "target_id", "lane_key"]


class Lane(NamedTuple):
    """A lane as the worker reads it."""

    lane_id: int
    target_id: int
    key: str


def feed(conn: Connection, channel: str, fed: Iterable[tuple[int, str, int]]) -> None:
    """The lanes of deliveries just made, (target, key, due time): a new lane is due with its
    first delivery, a lane with nothing pending is woken, a lane with deliveries pending is left
    as it is (its first delivery says when it is due). In the transaction that makes them."""
    due: dict[tuple[int, str], int] = {}
    for target, key, at_us in fed:
        due[target, key] = min(at_us, due.get((target, key), at_us))
    rows = [
        {"channel": channel, "target_id": target, "lane_key": key, "due_us": at_us}
        for (target, key), at_us in sorted(due.items())  # locked in one order by everyone
    ]
    upsert(conn, schema.delivery_lane, rows, KEY,
           lambda new: {"due_us": func.coalesce(LANE.due_us, new.due_us)})  # fmt: skip


def due(
    conn: Connection,
    channel: str,
    now_us: int,
    limit: int,
    *,
    skip_targets: Collection[int] = (),
    lock: bool = False,
) -> list[Lane]:
    """Up to ``limit`` lanes due by ``now_us`` and claimed by no node, the longest due first
    (not those of ``skip_targets``); ``lock``: each locked until the transaction ends, those
    another transaction holds passed over."""
    query = (
        select(LANE.lane_id, LANE.target_id, LANE.lane_key)
        .where(
            LANE.channel == channel,
            LANE.due_us <= now_us,
            or_(LANE.claimed_until_us.is_(None), LANE.claimed_until_us < now_us),
        )
        .order_by(LANE.due_us)
        .limit(limit)
    )
    if skip_targets:
        query = query.where(LANE.target_id.not_in(list(skip_targets)))
    if lock:
        query = query.with_for_update(skip_locked=True)
    return [Lane(*r) for r in conn.execute(query)]


def claim(conn: Connection, lane_ids: Collection[int], node: str, until_us: int) -> None:
    """Claim lanes (locked by :func:`due`) for ``node`` until ``until_us``."""
    if lane_ids:
        conn.execute(
            update(schema.delivery_lane)
            .where(LANE.lane_id.in_(list(lane_ids)))
            .values(claimed_by=node, claimed_until_us=until_us)
        )


def choose(
    conn: Connection,
    channel: str,
    now_us: int,
    limit: int,
    *,
    held: Collection[int] = (),
    skip_targets: Collection[int] = (),
    lease: tuple[str, int] | None = None,
) -> list[Lane]:
    """Up to ``limit`` lanes that are due, not ``held`` by this node (nor claimed by another).
    ``lease=(node, lease_us)`` on a database shared by several nodes: in a write transaction,
    each claimed until ``now_us + lease_us`` (lanes another node is claiming meanwhile are
    passed over). Without it (the only node, SQLite) this is a read."""
    found = due(conn, channel, now_us, limit + len(held), skip_targets=skip_targets,
                lock=lease is not None)  # fmt: skip
    chosen = [n for n in found if n.lane_id not in held][:limit]
    if lease is not None:
        node, lease_us = lease
        claim(conn, [n.lane_id for n in chosen], node, now_us + lease_us)
    return chosen


class FirstDue:
    """How a channel's store finds each lane's first pending delivery: its due time among the
    rows of the lane's target (``target``) and key (``key``) that are ``pending``, in ``order``.
    Called with the lanes, it gives their due times by lane id (a lane with nothing pending is
    left out), as :func:`settle` takes them."""

    def __init__(
        self,
        due: ColumnElement[Any],
        target: ColumnElement[Any],
        key: ColumnElement[Any],
        pending: ColumnElement[bool],
        order: ColumnElement[Any],
    ) -> None:
        first = (
            select(due)
            .where(target == LANE.target_id, key == LANE.lane_key, pending)
            .order_by(order)
            .limit(1)
            .scalar_subquery()
        )
        self._query = select(LANE.lane_id, first).where(
            LANE.lane_id.in_(bindparam("lanes", expanding=True))
        )

    def __call__(self, conn: Connection, chosen: Sequence[Lane]) -> dict[int, int]:
        rows = conn.execute(self._query, {"lanes": [n.lane_id for n in chosen]})
        return {lane_id: due for lane_id, due in rows if due is not None}


def settle(
    conn: Connection,
    lane_ids: Collection[int],
    first_due: Callable[[Connection, Sequence[Lane]], Mapping[int, int]],
    *,
    free: bool = True,
) -> set[int]:
    """Set lanes due when their first pending delivery is (``first_due`` of the lanes, by
    lane id; a lane it does not name has nothing pending); ``free``: their claims too (the
    node that holds them is done). The lanes settled (those another transaction holds are
    left for later)."""
    if not lane_ids:
        return set()
    held = conn.execute(
        select(LANE.lane_id, LANE.target_id, LANE.lane_key)
        .where(LANE.lane_id.in_(list(lane_ids)))
        .order_by(LANE.lane_id)
        .with_for_update(skip_locked=True)
    )
    lanes = [Lane(*r) for r in held]
    if not lanes:
        return set()
    dues = first_due(conn, lanes)  # read once the lanes are held
    values: dict[str, Any] = {"due_us": bindparam("b_due", type_=BigInteger)}
    if free:
        values |= {"claimed_by": None, "claimed_until_us": None}
    conn.execute(
        update(schema.delivery_lane).where(LANE.lane_id == bindparam("b_lane")).values(values),
        [{"b_lane": n.lane_id, "b_due": dues.get(n.lane_id)} for n in lanes],
    )
    return {n.lane_id for n in lanes}


def hold(
    conn: Connection, channel: str, target_id: int, key: str, node: str, now_us: int, until_us: int
) -> bool:
    """Claim the lane (target, key) for ``node`` until ``until_us``, or renew its claim, unless
    another node's claim runs past ``now_us``; whether ``node`` holds it. A missing lane is
    made (with nothing pending). On a shared database a node claiming it at the same time
    waits for this transaction, then finds the lane held."""
    claim = (
        update(schema.delivery_lane)
        .where(
            LANE.channel == channel,
            LANE.target_id == target_id,
            LANE.lane_key == key,
            or_(
                LANE.claimed_by.is_(None),
                LANE.claimed_by == node,
                LANE.claimed_until_us.is_(None),
                LANE.claimed_until_us < now_us,
            ),
        )
        .values(claimed_by=node, claimed_until_us=until_us)
    )
    if conn.execute(claim).rowcount:
        return True
    lane = (LANE.channel == channel) & (LANE.target_id == target_id) & (LANE.lane_key == key)
    if conn.execute(select(LANE.lane_id).where(lane)).first():
        return False  # another node holds it
    row = {"channel": channel, "target_id": target_id, "lane_key": key, "due_us": None}
    upsert(conn, schema.delivery_lane, [row], KEY, lambda new: {})
    return bool(conn.execute(claim).rowcount)


def release(conn: Connection, node: str, channel: str | None = None) -> None:
    """Free the claims of ``node`` (as it stops; of one ``channel``'s lanes when given): another
    node, or its restart, sends them (a lane another transaction holds keeps its claim until
    its lease ends)."""
    query = select(LANE.lane_id).where(LANE.claimed_by == node)
    if channel is not None:
        query = query.where(LANE.channel == channel)
    held = conn.execute(query.order_by(LANE.lane_id).with_for_update(skip_locked=True)).scalars()
    ids = list(held)
    if ids:
        conn.execute(
            update(schema.delivery_lane)
            .where(LANE.lane_id.in_(ids))
            .values(claimed_by=None, claimed_until_us=None)
        )


def ids(conn: Connection, channel: str, lanes: Iterable[tuple[int, str]]) -> list[int]:
    """The ids of those of the lanes (target, key) that exist."""
    keys: dict[int, set[str]] = {}
    for target, key in lanes:
        keys.setdefault(target, set()).add(key)
    found: list[int] = []
    for target, wanted in sorted(keys.items()):
        found += conn.execute(
            select(LANE.lane_id).where(
                LANE.channel == channel, LANE.target_id == target, LANE.lane_key.in_(wanted)
            )
        ).scalars()
    return found


def drop(conn: Connection, channel: str, target_id: int) -> None:
    """Forget a target's lanes (it is removed)."""
    conn.execute(
        delete(schema.delivery_lane).where(LANE.channel == channel, LANE.target_id == target_id)
    )
