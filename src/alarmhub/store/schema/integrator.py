"""The integrator API: its keys, the webhooks of integrators, the outbox of events (what webhooks
deliver and the event stream serves) and each webhook's deliveries of them."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from alarmhub.store.schema.base import metadata, serial

api_key = Table(
    "api_key",
    metadata,
    serial("key_id"),
    Column("name", String(64), nullable=False, unique=True),
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("scopes", String(200), nullable=False),
    Column("accounts", String(9), nullable=False, server_default=""),
    Column("created_us", BigInteger, nullable=False),
    Column("revoked_us", BigInteger, nullable=True),
    Column("last_used_us", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
"""Keys of the integrator API: the SHA-256 of each key (the key itself is shown once), its
scopes (space-separated), the account-number prefix it is limited to (``''``: every account)."""

webhook = Table(
    "webhook",
    metadata,
    serial("webhook_id"),
    Column("url", String(2000), nullable=False),
    Column("events", String(400), nullable=False),
    Column("accounts", String(9), nullable=False, server_default=""),
    Column("secret_encrypted", String(512), nullable=False),
    Column("created_us", BigInteger, nullable=False),
    Column("removed_us", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
"""Integrators' webhooks: where, which event kinds (space-separated), which accounts (a prefix),
the signing secret (encrypted with the station's key)."""

event = Table(
    "event",
    metadata,
    serial("event_id"),
    Column("kind", String(40), nullable=False),
    Column("account_number", String(9), nullable=False, server_default=""),
    Column("body", Text, nullable=False),
    Column("at_us", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)
"""The outbox: every event an integrator can hear of, written in the transaction of the change it
reports (under the incident counter's lock, so event ids follow the order of the commits); its
``body`` is the JSON that webhooks and the event stream send, as it will be sent."""
Index("ix_event_at", event.c.at_us)
Index("ix_event_account", event.c.account_number, event.c.event_id)

webhook_delivery = Table(
    "webhook_delivery",
    metadata,
    serial("delivery_id"),
    Column("webhook_id", BigInteger, nullable=False),
    Column("event_id", BigInteger, nullable=False),
    Column("account_number", String(9), nullable=False, server_default=""),
    Column("state", String(10), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_us", BigInteger, nullable=False),
    Column("last_status", Integer, nullable=True),
    Column("last_error", String(200), nullable=True),
    Column("created_us", BigInteger, nullable=False),
    Column("delivered_us", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
"""One event to one webhook, made in the transaction that published the event: ``pending``
(due at ``next_attempt_us``, in its lane: the webhook's and the account's), ``delivered`` or
``failed`` (retries exhausted; it can be replayed), with the attempts made and how the last one
ended."""
Index(
    "ix_webhook_delivery_event",
    webhook_delivery.c.webhook_id,
    webhook_delivery.c.event_id,
    unique=True,
)
Index(
    "ix_webhook_delivery_lane",
    webhook_delivery.c.webhook_id,
    webhook_delivery.c.account_number,
    webhook_delivery.c.state,
    webhook_delivery.c.event_id,
)
"""A lane's deliveries: one webhook's pending deliveries of one account, oldest event first."""

delivery_lane = Table(
    "delivery_lane",
    metadata,
    serial("lane_id"),
    Column("channel", String(16), nullable=False),
    Column("target_id", BigInteger, nullable=False),
    Column("lane_key", String(64), nullable=False),
    Column("due_us", BigInteger, nullable=True),
    Column("claimed_by", String(64), nullable=True),
    Column("claimed_until_us", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
"""Lanes of durable deliveries: one for each target of a channel (a webhook) and key (an
account) that has had a delivery; its deliveries go out in order, one lane's failures never
holding back another's. ``due_us`` is when its first pending delivery may go (NULL: none is
pending); a node that claimed the lane holds it until ``claimed_until_us``."""
Index(
    "ix_delivery_lane_key",
    delivery_lane.c.channel,
    delivery_lane.c.target_id,
    delivery_lane.c.lane_key,
    unique=True,
)
Index("ix_delivery_lane_due", delivery_lane.c.channel, delivery_lane.c.due_us)
