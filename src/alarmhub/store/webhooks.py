"""Webhooks in the store: added (the secret encrypted with the station's key), listed, removed;
their deliveries, made in the transaction that publishes each event (:func:`deliver`), taken by
the worker (on a shared database, claimed by one node for a while: a lease), recorded after each
attempt, listed, replayed, and forgotten with their events.

Deliveries of one webhook and one account (a lane, :mod:`alarmhub.store.lanes`) go out in
event order, one at a time: the worker reads the lanes that are due (:func:`due_lanes`), and
:func:`take` hands out the first deliveries of each as a chain (the rule is
:func:`alarmhub.core.webhooks.chain`). A lane whose first delivery failed is due again at its
retry, and waits alone: what the worker reads grows with what may be sent, never with the
deliveries that wait.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from cryptography.fernet import Fernet
from sqlalchemy import (
    BigInteger,
    Connection,
    Integer,
    String,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)

from alarmhub import secret_key
from alarmhub.core import events, webhooks
from alarmhub.core.errors import ProvisioningError, SecretKeyError
from alarmhub.store import lanes, provisioning, schema

HOOK = schema.webhook.c
DELIVERY = schema.webhook_delivery.c
EVENT = schema.event.c
LANE = lanes.LANE
CHANNEL = "webhook"
"""Webhooks' lanes (:mod:`alarmhub.store.lanes`): a webhook's id and an account each."""
CHAIN = 64
"""A lane's deliveries handed out at most at once (sent one after the other)."""


def add(
    conn: Connection, key: Fernet, url: str, kinds: Sequence[str], accounts: str, now_us: int
) -> tuple[int, str]:
    """Add a webhook; its id and signing secret (shown once). It hears of the events
    published from now on, not of those already in the outbox."""
    kinds = list(dict.fromkeys(kinds))
    problem = webhooks.url_problem(url) or webhooks.subscription_problem(kinds, accounts)
    if problem:
        raise ProvisioningError(problem)
    secret = webhooks.new_secret()
    values = {"url": url, "events": " ".join(kinds), "accounts": accounts,
              "secret_encrypted": secret_key.encrypt(key, secret),
              "created_us": now_us}  # fmt: skip
    inserted = conn.execute(insert(schema.webhook).values(values)).inserted_primary_key
    assert inserted is not None
    provisioning.bump_revision(conn)  # routing's cache of the webhooks
    return int(inserted[0]), secret


def listed(conn: Connection) -> list[dict[str, Any]]:
    """The webhooks not removed (never their secrets), oldest first."""
    columns = (HOOK.webhook_id, HOOK.url, HOOK.events, HOOK.accounts, HOOK.created_us)
    rows = conn.execute(
        select(*columns).where(HOOK.removed_us.is_(None)).order_by(HOOK.webhook_id)
    ).mappings()
    return [{**r, "events": r["events"].split()} for r in rows]


def remove(conn: Connection, webhook_id: int, now_us: int) -> None:
    """Remove a webhook: nothing more is sent to it; its pending deliveries become failed."""
    done = conn.execute(
        update(schema.webhook)
        .where(HOOK.webhook_id == webhook_id, HOOK.removed_us.is_(None))
        .values(removed_us=now_us)
    )
    if not done.rowcount:
        raise ProvisioningError(f"no webhook {webhook_id}")
    provisioning.bump_revision(conn)
    conn.execute(
        update(schema.webhook_delivery)
        .where(DELIVERY.webhook_id == webhook_id, DELIVERY.state == webhooks.PENDING)
        .values(state=webhooks.FAILED, last_error="webhook removed")
    )
    lanes.drop(conn, CHANNEL, webhook_id)


def deliveries(
    conn: Connection, failed_only: bool = False, webhook_id: int | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    """Deliveries, newest first, with their event's id (as sent) and kind."""
    query = (
        select(
            DELIVERY.delivery_id,
            DELIVERY.webhook_id,
            DELIVERY.event_id,
            EVENT.kind,
            DELIVERY.account_number,
            DELIVERY.state,
            DELIVERY.attempts,
            DELIVERY.next_attempt_us,
            DELIVERY.last_status,
            DELIVERY.last_error,
            DELIVERY.created_us,
            DELIVERY.delivered_us,
        )
        .join(schema.event, EVENT.event_id == DELIVERY.event_id)
        .order_by(DELIVERY.delivery_id.desc())
        .limit(limit)
    )
    if failed_only:
        query = query.where(DELIVERY.state == webhooks.FAILED)
    if webhook_id is not None:
        query = query.where(DELIVERY.webhook_id == webhook_id)
    return [
        {**r, "event_id": events.event_id_text(r["event_id"])}
        for r in conn.execute(query).mappings()
    ]


def replay(conn: Connection, delivery_id: int, now_us: int) -> None:
    """Send a delivery again (failed, or delivered), from its first attempt, now."""
    row = conn.execute(
        select(DELIVERY.state, DELIVERY.webhook_id, DELIVERY.account_number, HOOK.removed_us)
        .join(schema.webhook, HOOK.webhook_id == DELIVERY.webhook_id)
        .where(DELIVERY.delivery_id == delivery_id)
    ).first()
    if row is None:
        raise ProvisioningError(f"no delivery {delivery_id}")
    if row.removed_us is not None:
        raise ProvisioningError(f"delivery {delivery_id}: its webhook is removed")
    if row.state == webhooks.PENDING:
        raise ProvisioningError(f"delivery {delivery_id} is pending already")
    conn.execute(
        update(schema.webhook_delivery)
        .where(DELIVERY.delivery_id == delivery_id)
        .values(
            state=webhooks.PENDING,
            attempts=0,
            next_attempt_us=now_us,
            delivered_us=None,
        )
    )
    lanes.feed(conn, CHANNEL, [(row.webhook_id, row.account_number, now_us)])
    settle(conn, lanes.ids(conn, CHANNEL, [(row.webhook_id, row.account_number)]), free=False)


# the outbox's side ----------------------------------------------------------------------------


class Subscribed(NamedTuple):
    """A webhook as publishing sees it: which event kinds and accounts (a prefix) it wants."""

    webhook_id: int
    kinds: frozenset[str]
    accounts: str


_SUBSCRIBED = select(HOOK.webhook_id, HOOK.events, HOOK.accounts).where(HOOK.removed_us.is_(None))


def subscribed(conn: Connection) -> list[Subscribed]:
    """The webhooks not removed."""
    return [
        Subscribed(r.webhook_id, frozenset(r.events.split()), r.accounts)
        for r in conn.execute(_SUBSCRIBED)
    ]


def deliver(
    conn: Connection,
    hooks: Sequence[Subscribed],
    published: Iterable[Sequence[Any]],
) -> None:
    """Make the deliveries of events just published, (event id, kind, account, time), to the
    ``hooks`` that want them: in the publishing transaction, so a delivery exists exactly when
    its event was committed."""
    wanted = [
        dict(webhook_id=hook.webhook_id, event_id=event_id, account_number=account,
             state=webhooks.PENDING, next_attempt_us=at_us, created_us=at_us)
        for event_id, kind, account, at_us in published
        for hook in hooks
        if webhooks.wants(hook.kinds, hook.accounts, kind, account)
    ]  # fmt: skip
    if wanted:
        conn.execute(insert(schema.webhook_delivery), wanted)
        lanes.feed(conn, CHANNEL, ((w["webhook_id"], w["account_number"], w["next_attempt_us"])
                                   for w in wanted))  # fmt: skip


def forget(conn: Connection, event_ids: Sequence[int]) -> None:
    """Forget the deliveries of events the outbox forgets."""
    every = list(conn.execute(select(HOOK.webhook_id)).scalars())
    for webhook_id in every:  # each found by its (webhook, event) index
        pending = conn.execute(
            select(DELIVERY.account_number).where(
                DELIVERY.webhook_id == webhook_id,
                DELIVERY.event_id.in_(event_ids),
                DELIVERY.state == webhooks.PENDING,
            )
        ).scalars()
        left = lanes.ids(conn, CHANNEL, ((webhook_id, account) for account in pending))
        conn.execute(
            delete(schema.webhook_delivery).where(
                DELIVERY.webhook_id == webhook_id, DELIVERY.event_id.in_(event_ids)
            )
        )
        settle(conn, left, free=False)


# the worker's side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery taken by this node: what one attempt sends, and where."""

    delivery_id: int
    lane_id: int
    webhook_id: int
    url: str
    secret: str | None  # None: it cannot be decrypted with this station's key
    event_id: int
    body: bytes
    attempts: int
    lease_until_us: int | None  # after this another node may claim it (None: no other node)

    @property
    def target_id(self) -> int:
        """The lane's target (:mod:`alarmhub.outbound.delivery`): the webhook."""
        return self.webhook_id


class Taken(NamedTuple):
    """What :func:`take` hands out: chains (each one lane's deliveries, in event order) and the
    lanes given that hand out nothing now (to :func:`settle`: their first delivery is not due,
    or none is pending, or the limit was reached before them)."""

    chains: list[list[Claimed]]
    idle: list[int]


def due_lanes(
    conn: Connection,
    now_us: int,
    limit: int,
    *,
    held: Collection[int] = (),
    skip_webhooks: Collection[int] = (),
    claim: tuple[str, int] | None = None,
) -> list[lanes.Lane]:
    """Webhooks' lanes that are due (:func:`alarmhub.store.lanes.choose`; ``claim``: its
    ``lease``)."""
    return lanes.choose(conn, CHANNEL, now_us, limit, held=held, skip_targets=skip_webhooks,
                        lease=claim)  # fmt: skip


_LANE = (
    select(DELIVERY.delivery_id, DELIVERY.next_attempt_us)
    .where(
        DELIVERY.webhook_id == bindparam("hook"),
        DELIVERY.account_number == bindparam("account"),
        DELIVERY.state == webhooks.PENDING,
    )
    .order_by(DELIVERY.event_id)
    .limit(bindparam("read"))
)


def take(
    conn: Connection,
    key: Fernet,
    now_us: int,
    chosen: Sequence[lanes.Lane],
    limit: int,
    lease_until_us: int | None = None,
) -> Taken:
    """The deliveries of the ``chosen`` lanes (from :func:`due_lanes`) that may be sent now, up
    to :data:`CHAIN` of each and ``limit`` in all (the rule:
    :func:`alarmhub.core.webhooks.chain`); each lane's first ones only are read."""
    chains: list[tuple[int, list[int]]] = []
    idle: list[int] = []
    left = limit
    for lane in chosen:
        if left <= 0:
            idle.append(lane.lane_id)
            continue
        read = {"hook": lane.target_id, "account": lane.key, "read": min(CHAIN, left)}
        chain = webhooks.chain(((r[0], r[1]) for r in conn.execute(_LANE, read)), now_us)
        if chain:
            chains.append((lane.lane_id, chain))
            left -= len(chain)
        else:
            idle.append(lane.lane_id)
    lane_of = {i: lane_id for lane_id, chain in chains for i in chain}
    found = _claimed(conn, key, lane_of, lease_until_us) if lane_of else {}
    return Taken([[found[i] for i in chain] for _, chain in chains], idle)


_CLAIMED = (
    select(
        DELIVERY.delivery_id,
        DELIVERY.webhook_id,
        DELIVERY.event_id,
        DELIVERY.attempts,
        HOOK.url,
        HOOK.secret_encrypted,
        EVENT.body,
    )
    .join(schema.webhook, HOOK.webhook_id == DELIVERY.webhook_id)
    .join(schema.event, EVENT.event_id == DELIVERY.event_id)
    .where(DELIVERY.delivery_id.in_(bindparam("ids", expanding=True)))
)


def _claimed(
    conn: Connection, key: Fernet, lane_of: Mapping[int, int], lease_until: int | None
) -> dict[int, Claimed]:
    rows = conn.execute(_CLAIMED, {"ids": list(lane_of)}).all()
    secrets: dict[int, str | None] = {}
    for r in rows:  # decrypted once a webhook
        if r.webhook_id not in secrets:
            secrets[r.webhook_id] = _secret(key, r.secret_encrypted)
    return {
        r.delivery_id: Claimed(r.delivery_id, lane_of[r.delivery_id], r.webhook_id, r.url,
                               secrets[r.webhook_id], r.event_id, r.body.encode("utf-8"),
                               r.attempts, lease_until)
        for r in rows
    }  # fmt: skip


def _secret(key: Fernet, encrypted: str) -> str | None:
    try:
        return secret_key.decrypt(key, encrypted)
    except (SecretKeyError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one attempt ended: ``status`` the receiver's answer (None: none came), ``error``
    why it failed, and when to try again (None: delivered, or no more attempts)."""

    delivery_id: int
    state: str
    attempts: int
    status: int | None
    error: str | None
    next_attempt_us: int | None

    @classmethod
    def from_wire(cls, fields: dict[str, Any]) -> Outcome:
        """An outcome as a frame carried it (a dataclass is sent as its fields)."""
        return cls(**fields)


def record(conn: Connection, outcomes: Sequence[Outcome], now_us: int) -> None:
    """Record attempts (their lanes are settled once their chains end: :func:`settle`)."""
    if not outcomes:
        return
    conn.execute(
        update(schema.webhook_delivery)
        .where(DELIVERY.delivery_id == bindparam("b_id"))
        .values(
            state=bindparam("b_state", type_=String),
            attempts=bindparam("b_attempts", type_=Integer),
            last_status=bindparam("b_status", type_=Integer),
            last_error=bindparam("b_error", type_=String),
            next_attempt_us=func.coalesce(
                bindparam("b_next", type_=BigInteger), DELIVERY.next_attempt_us
            ),
            delivered_us=bindparam("b_delivered", type_=BigInteger),
        ),
        [
            {
                "b_id": o.delivery_id,
                "b_state": o.state,
                "b_attempts": o.attempts,
                "b_status": o.status,
                "b_error": o.error,
                "b_next": o.next_attempt_us,
                "b_delivered": now_us if o.state == webhooks.DELIVERED else None,
            }
            for o in outcomes
        ],
    )


_first_due = lanes.FirstDue(
    DELIVERY.next_attempt_us, DELIVERY.webhook_id, DELIVERY.account_number,
    DELIVERY.state == webhooks.PENDING, DELIVERY.event_id,
)  # fmt: skip


def settle(conn: Connection, lane_ids: Collection[int], *, free: bool = True) -> set[int]:
    """Make lanes due when their first pending delivery is, after their outcomes are recorded,
    and (``free``) free their claims; the lanes settled (:func:`alarmhub.store.lanes.settle`)."""
    return lanes.settle(conn, lane_ids, _first_due, free=free)


def release(conn: Connection, node: str) -> None:
    """Give back every webhook lane ``node`` holds (as it stops): another node, or its restart,
    sends them. The lanes of other channels (automation outputs) are theirs to give back."""
    lanes.release(conn, node, CHANNEL)
