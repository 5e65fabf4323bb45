"""Webhooks in the store: added (the secret encrypted with the station's key), listed, removed;
their deliveries made from the outbox (each webhook's cursor moved over new events), claimed by a
node for a while (a lease), recorded after each attempt, listed and replayed.

Deliveries of one webhook and one account go out in event order: a delivery is not claimed while
an earlier one of the same webhook and account is pending (waiting for a retry, or in flight).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet
from sqlalchemy import (
    BigInteger,
    Connection,
    Integer,
    String,
    and_,
    bindparam,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)

from alarmhub import secret_key
from alarmhub.core import events, webhooks
from alarmhub.core.errors import ProvisioningError, SecretKeyError
from alarmhub.store import schema

HOOK = schema.webhook.c
DELIVERY = schema.webhook_delivery.c
EVENT = schema.event.c
FAN_OUT_BATCH = 1000


def add(
    conn: Connection, key: Fernet, url: str, kinds: Sequence[str], accounts: str, now_us: int
) -> tuple[int, str]:
    """Add a webhook; its id and signing secret (shown once). It hears of the events that
    happen from now on, not of those already in the outbox."""
    kinds = list(dict.fromkeys(kinds))
    problem = webhooks.url_problem(url) or webhooks.subscription_problem(kinds, accounts)
    if problem:
        raise ProvisioningError(problem)
    secret = webhooks.new_secret()
    newest = conn.execute(select(func.max(EVENT.event_id))).scalar() or 0
    values = {"url": url, "events": " ".join(kinds), "accounts": accounts,
              "secret_encrypted": secret_key.encrypt(key, secret), "created_us": now_us,
              "delivered_through": newest}  # fmt: skip
    inserted = conn.execute(insert(schema.webhook).values(values)).inserted_primary_key
    assert inserted is not None
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


# the worker's side ----------------------------------------------------------------------------


def behind(conn: Connection, now_us: int) -> tuple[bool, bool]:
    """(whether some webhook has events to fan out, whether some delivery is due): two cheap
    reads that spare an idle node its write transactions."""
    newest = conn.execute(select(func.max(EVENT.event_id))).scalar() or 0
    lowest = conn.execute(
        select(func.min(HOOK.delivered_through)).where(HOOK.removed_us.is_(None))
    ).scalar()
    due = conn.execute(
        select(DELIVERY.delivery_id).where(_claimable(now_us)).limit(1)
    ).first()  # fmt: skip
    return lowest is not None and lowest < newest, due is not None


def fan_out(conn: Connection, now_us: int, batch: int = FAN_OUT_BATCH) -> int:
    """Move each webhook's cursor over up to ``batch`` new events, making a delivery of each it
    wants; the number of deliveries made. On a shared database a webhook another node is
    fanning out is skipped (its row is locked)."""
    hooks = conn.execute(
        select(HOOK.webhook_id, HOOK.events, HOOK.accounts, HOOK.delivered_through)
        .where(HOOK.removed_us.is_(None))
        .order_by(HOOK.webhook_id)
        .with_for_update(skip_locked=True)
    ).all()
    made = 0
    for hook in hooks:
        rows = conn.execute(
            select(EVENT.event_id, EVENT.kind, EVENT.account_number)
            .where(EVENT.event_id > hook.delivered_through)
            .order_by(EVENT.event_id)
            .limit(batch)
        ).all()
        if not rows:
            continue
        kinds = frozenset(hook.events.split())
        wanted = [
            {
                "webhook_id": hook.webhook_id,
                "event_id": r.event_id,
                "account_number": r.account_number,
                "state": webhooks.PENDING,
                "next_attempt_us": now_us,
                "created_us": now_us,
            }
            for r in rows
            if webhooks.wants(kinds, hook.accounts, r.kind, r.account_number)
        ]
        if wanted:
            conn.execute(insert(schema.webhook_delivery), wanted)
        conn.execute(
            update(schema.webhook)
            .where(HOOK.webhook_id == hook.webhook_id)
            .values(delivered_through=rows[-1].event_id)
        )
        made += len(wanted)
    return made


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery this node holds until its lease ends: what one attempt sends, and where."""

    delivery_id: int
    webhook_id: int
    url: str
    secret: str | None  # None: it cannot be decrypted with this station's key
    event_id: int
    body: bytes
    attempts: int
    lease_until_us: int  # after this another node may claim it: not to be sent any more


def _claimable(now_us: int) -> Any:
    earlier = schema.webhook_delivery.alias("earlier")
    return and_(
        DELIVERY.state == webhooks.PENDING,
        DELIVERY.next_attempt_us <= now_us,
        or_(DELIVERY.claimed_until_us.is_(None), DELIVERY.claimed_until_us < now_us),
        ~exists().where(
            earlier.c.webhook_id == DELIVERY.webhook_id,
            earlier.c.account_number == DELIVERY.account_number,
            earlier.c.state == webhooks.PENDING,
            earlier.c.event_id < DELIVERY.event_id,
        ),
    )


def claim(
    conn: Connection,
    key: Fernet,
    node: str,
    now_us: int,
    lease_us: int,
    limit: int,
    skip_webhooks: Iterable[int] = (),
) -> list[Claimed]:
    """Claim up to ``limit`` due deliveries, oldest event first, for ``node`` until
    ``now_us + lease_us`` (on PostgreSQL rows another node is claiming are skipped)."""
    query = (
        select(DELIVERY.delivery_id)
        .join(schema.webhook, HOOK.webhook_id == DELIVERY.webhook_id)
        .where(_claimable(now_us), HOOK.removed_us.is_(None))
        .order_by(DELIVERY.event_id)
        .limit(limit)
        .with_for_update(skip_locked=True, of=schema.webhook_delivery)
    )
    skipped = list(skip_webhooks)
    if skipped:
        query = query.where(DELIVERY.webhook_id.not_in(skipped))
    ids = list(conn.execute(query).scalars())
    if not ids:
        return []
    conn.execute(
        update(schema.webhook_delivery)
        .where(DELIVERY.delivery_id.in_(ids))
        .values(claimed_by=node, claimed_until_us=now_us + lease_us)
    )
    rows = conn.execute(
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
        .where(DELIVERY.delivery_id.in_(ids))
        .order_by(DELIVERY.event_id)
    ).all()
    secrets = {r.webhook_id: _secret(key, r.secret_encrypted) for r in rows}  # once a webhook
    return [
        Claimed(
            r.delivery_id,
            r.webhook_id,
            r.url,
            secrets[r.webhook_id],
            r.event_id,
            r.body.encode("utf-8"),
            r.attempts,
            now_us + lease_us,
        )
        for r in rows
    ]


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


def release(conn: Connection, node: str) -> None:
    """Give back what ``node`` holds (it stops): another node, or its restart, sends it."""
    conn.execute(
        update(schema.webhook_delivery)
        .where(DELIVERY.claimed_by == node, DELIVERY.state == webhooks.PENDING)
        .values(claimed_by=None, claimed_until_us=None)
    )
