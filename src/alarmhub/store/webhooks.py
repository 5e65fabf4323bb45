"""Webhooks in the store: added (the secret encrypted with the station's key), listed, removed;
their deliveries, made in the transaction that publishes each event (:func:`deliver`), taken by
the worker (on a shared database, claimed by one node for a while: a lease), recorded after each
attempt, listed, replayed, and forgotten with their events.

Deliveries of one webhook and one account go out in event order: :func:`take` hands them out as
chains, each waiting behind its account's first delivery that cannot go now (waiting for a
retry, or in flight); the rule is :func:`alarmhub.core.webhooks.sendable`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
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
from alarmhub.store import provisioning, schema

HOOK = schema.webhook.c
DELIVERY = schema.webhook_delivery.c
EVENT = schema.event.c
QUEUE_READ = 2000
"""A webhook's pending deliveries read at most by one turn of the worker, oldest first."""


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
        .values(
            state=webhooks.FAILED,
            last_error="webhook removed",
            claimed_by=None,
            claimed_until_us=None,
        )
    )


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
        select(DELIVERY.state, HOOK.removed_us)
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
            claimed_by=None,
            claimed_until_us=None,
            delivered_us=None,
        )
    )


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


def forget(conn: Connection, event_ids: Sequence[int]) -> None:
    """Forget the deliveries of events the outbox forgets."""
    every = list(conn.execute(select(HOOK.webhook_id)).scalars())
    for webhook_id in every:  # each found by its (webhook, event) index
        conn.execute(
            delete(schema.webhook_delivery).where(
                DELIVERY.webhook_id == webhook_id, DELIVERY.event_id.in_(event_ids)
            )
        )


# the worker's side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery taken by this node: what one attempt sends, and where."""

    delivery_id: int
    webhook_id: int
    url: str
    secret: str | None  # None: it cannot be decrypted with this station's key
    event_id: int
    body: bytes
    attempts: int
    lease_until_us: int | None  # after this another node may claim it (None: no other node)


_HOOKS = select(HOOK.webhook_id).where(HOOK.removed_us.is_(None)).order_by(HOOK.webhook_id)
_QUEUE = (
    select(
        DELIVERY.delivery_id,
        DELIVERY.account_number,
        DELIVERY.next_attempt_us,
        DELIVERY.claimed_until_us,
    )
    .where(DELIVERY.webhook_id == bindparam("hook"), DELIVERY.state == webhooks.PENDING)
    .order_by(DELIVERY.event_id)
    .limit(bindparam("read"))
)


def take(
    conn: Connection,
    key: Fernet,
    now_us: int,
    limit: int,
    *,
    passed: Collection[int] = (),
    held: Collection[int] = (),
    skip_webhooks: Collection[int] = (),
    claim: tuple[str, int] | None = None,
) -> list[list[Claimed]]:
    """Up to ``limit`` deliveries that may be sent now, as chains (one account's, in event
    order; :func:`alarmhub.core.webhooks.sendable` says which, with ``passed`` and ``held``).

    ``claim=(node, lease_us)`` on a database shared by several nodes: in a write transaction,
    each webhook's deliveries are handed out by one node at a time (its row locked; a webhook
    another node is handing out is skipped) and those taken are claimed until ``now_us +
    lease_us``. Without it (the only node, SQLite) this is a read."""
    hooks = _HOOKS if claim is None else _HOOKS.with_for_update(skip_locked=True)
    chains: list[list[int]] = []
    read = QUEUE_READ + len(passed) + len(held)
    for webhook_id in conn.execute(hooks).scalars().all():
        left = limit - sum(map(len, chains))
        if left <= 0:
            break
        if webhook_id in skip_webhooks:
            continue
        queue = conn.execute(_QUEUE, {"hook": webhook_id, "read": read})
        waiting = (webhooks.Waiting(*r) for r in queue)
        chains += webhooks.sendable(waiting, now_us, passed, held, left)
    ids = [i for chain in chains for i in chain]
    if not ids:
        return []
    lease_until = None
    if claim is not None:
        node, lease_us = claim
        lease_until = now_us + lease_us
        conn.execute(
            update(schema.webhook_delivery)
            .where(DELIVERY.delivery_id.in_(ids))
            .values(claimed_by=node, claimed_until_us=lease_until)
        )
    found = _claimed(conn, key, ids, lease_until)
    return [[found[i] for i in chain] for chain in chains]


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
    conn: Connection, key: Fernet, ids: Sequence[int], lease_until: int | None
) -> dict[int, Claimed]:
    rows = conn.execute(_CLAIMED, {"ids": ids}).all()
    secrets: dict[int, str | None] = {}
    for r in rows:  # decrypted once a webhook
        if r.webhook_id not in secrets:
            secrets[r.webhook_id] = _secret(key, r.secret_encrypted)
    return {
        r.delivery_id: Claimed(r.delivery_id, r.webhook_id, r.url, secrets[r.webhook_id],
                               r.event_id, r.body.encode("utf-8"), r.attempts, lease_until)
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


def record(conn: Connection, outcomes: Sequence[Outcome], now_us: int) -> None:
    """Record attempts and free their claims."""
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
            claimed_by=None,
            claimed_until_us=None,
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


def release(conn: Connection, node: str, delivery_ids: Collection[int] | None = None) -> None:
    """Give back what ``node`` holds (None: all of it, as it stops): another node, or its
    restart, sends it."""
    query = (
        update(schema.webhook_delivery)
        .where(DELIVERY.claimed_by == node, DELIVERY.state == webhooks.PENDING)
        .values(claimed_by=None, claimed_until_us=None)
    )
    if delivery_ids is not None:
        if not delivery_ids:
            return
        query = query.where(DELIVERY.delivery_id.in_(list(delivery_ids)))
    conn.execute(query)
