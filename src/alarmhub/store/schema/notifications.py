"""Notifications to subscribers (decisions section 13): the gateways (one row per channel), the
station's templates, and the messages (the queue and the log at once)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, PrimaryKeyConstraint, String, Table, Text

from alarmhub.store.schema.base import metadata, serial

notify_gateway = Table(
    "notify_gateway",
    metadata,
    Column("channel", String(8), primary_key=True),
    Column("url", String(2000), nullable=False),
    Column("sender", String(120), nullable=False, server_default=""),
    Column("format", String(8), nullable=False, server_default=""),
    Column("tls", String(8), nullable=False, server_default=""),
    Column("username", String(200), nullable=False, server_default=""),
    Column("secret_encrypted", String(1024), nullable=True),
    Column("changed_us", BigInteger, nullable=False),
)
"""How messages of a channel go out: ``email`` through an SMTP server (``tls``: ``starttls``,
``implicit`` or ``''``), ``sms`` through an HTTP gateway (``format``: ``twilio`` or ``json``);
the sender (``From``), the user and the password or secret, encrypted with the station's key
(NULL: none)."""

notify_template = Table(
    "notify_template",
    metadata,
    Column("kind", String(16), nullable=False),
    Column("channel", String(8), nullable=False),
    Column("subject", String(200), nullable=False, server_default=""),
    Column("body", Text, nullable=False),
    Column("changed_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("kind", "channel"),
)
"""A station's templates of a kind's and channel's messages, where they differ from the
defaults (``alarmhub.core.notifications.DEFAULTS``)."""

notification = Table(
    "notification",
    metadata,
    serial("notification_id"),
    Column("contact_id", BigInteger, nullable=False),
    Column("account_number", String(9), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("channel", String(8), nullable=False),
    Column("recipient", String(120), nullable=False),
    Column("subject", String(200), nullable=False, server_default=""),
    Column("body", Text, nullable=False),
    Column("html", Text, nullable=False, server_default=""),
    Column("hist_text", Text, nullable=False, server_default=""),
    Column("zone", String(8), nullable=False, server_default=""),
    Column("area", String(4), nullable=False, server_default=""),
    Column("at_us", BigInteger, nullable=True),
    Column("event_id", BigInteger, nullable=True),
    Column("incident_number", BigInteger, nullable=True),
    Column("state", String(8), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("due_us", BigInteger, nullable=False),
    Column("last_error", String(200), nullable=True),
    Column("queued_us", BigInteger, nullable=False),
    Column("sent_us", BigInteger, nullable=True),
    Column("digest_id", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)
"""One message to one contact by one channel, written in the transaction that published what it
tells of (the event, or the routed signal: ``incident_number``) with what it is rendered from
(``hist_text``, ``zone``, ``area``, ``at_us``; its subject, body and HTML empty till the sender
renders it and records the attempt: ``alarmhub.store.notification_rendering``; a message
queued before has no ``at_us`` and its text already): ``queued``
(its next attempt due at ``due_us``, in its lane: the contact's and the channel's), ``sent``
or ``failed``, with the attempts made and why the last one failed (short, never a secret). A
message sent (or failed) within a storm's digest names it (``digest_id``: the digest's own
message, of kind ``digest``)."""
Index("ix_notification_account", notification.c.account_number, notification.c.notification_id)
"""The log of an account's messages, newest first (the whole log: the primary key)."""
Index(
    "ix_notification_lane",
    notification.c.contact_id,
    notification.c.channel,
    notification.c.state,
    notification.c.notification_id,
)
"""A lane's messages: one contact's queued messages of one channel, oldest first."""
Index("ix_notification_state", notification.c.state, notification.c.notification_id)
"""The failed messages (the console counts them every few seconds), newest first."""
