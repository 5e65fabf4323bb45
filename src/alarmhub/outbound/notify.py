"""Notifications, the channel: what the one delivery worker (:mod:`alarmhub.outbound.delivery`)
needs to send the messages to subscribers (decisions section 13). The messages are queued in the
transaction that publishes what they tell of (:mod:`alarmhub.store.notifications`), unrendered,
and rendered here as they are taken (:mod:`alarmhub.store.notification_rendering`); their lanes
are one contact's and one channel's, taken one send at a time, in a storm as a digest
(:mod:`alarmhub.store.notification_sending`, :mod:`alarmhub.core.digest`).

An attempt sends by the message's channel: e-mail through :class:`~alarmhub.outbound.email.
EmailSender`, SMS through :class:`~alarmhub.outbound.sms.SmsSender`, each made from the gateway
the station set (read from the store, its secret decrypted with the station's key, read again
when it changes). A channel with no gateway set keeps its messages queued, retried every
:data:`NO_GATEWAY_SECONDS` with the error ``no email gateway set`` (or ``sms``), their attempts
not counted: they wait for a gateway, never dropped. Outcomes and retries follow the shared
schedule (:mod:`alarmhub.core.delivery`).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Collection, Sequence
from datetime import UTC, tzinfo
from typing import Any

from cryptography.fernet import Fernet
from sqlalchemy import Connection, select
from sqlalchemy.engine import Engine

from alarmhub import metrics
from alarmhub.core import delivery, units
from alarmhub.core import notifications as rules
from alarmhub.outbound.delivery import (
    CONCURRENCY,
    POLL_SECONDS,
    Chains,
    DeliveryWorker,
    Recorder,
)
from alarmhub.outbound.email import Email, EmailSender, SmtpServer
from alarmhub.outbound.sms import SmsGateway, SmsSender
from alarmhub.store import lanes, schema
from alarmhub.store import notification_sending as store
from alarmhub.store.notifications import Gateway, gateway

__all__ = ["NO_GATEWAY_SECONDS", "NotifyChannel", "NotifyWorker"]

log = logging.getLogger("alarmhub.notify")
ATTEMPT_SECONDS = 30.0
"""An attempt (a connection, TLS, AUTH and the message; each step bounded by the senders) that
has not ended by then is retried."""
NO_GATEWAY_SECONDS = 5.0
"""A message of a channel with no gateway is looked at again this often (it is sent within
these seconds of a gateway being set)."""
PER_RECIPIENT = len(rules.CHANNELS)
"""Attempts in flight to one contact at most: one a channel (a lane, one contact's and one
channel's, sends one message at a time, in order)."""
_CHANGED = select(schema.notify_gateway.c.channel, schema.notify_gateway.c.changed_us)


def no_gateway(channel: str) -> str:
    """The error of a message whose channel has no gateway set."""
    return f"no {channel} gateway set"


Sender = EmailSender | SmsSender


class NotifyChannel:
    """The messages to subscribers in the store (the gateways' secrets decrypted with the
    station's ``key``; a digest's times in ``station``'s zone where the account has none), and
    the send of one by its channel's gateway."""

    name = store.CHANNEL
    attempt_seconds = ATTEMPT_SECONDS
    log = log

    def __init__(self, key: Fernet, station: tzinfo = UTC) -> None:
        self._key = key
        self._station = station
        self._changed: dict[str, int] = {}  # the gateways read: each one's changed_us
        self._gateways: dict[str, Gateway] = {}
        self._senders: dict[str, tuple[Gateway, Sender]] = {}
        self._retired: list[Sender] = []

    def take(
        self,
        conn: Connection,
        now_us: int,
        chosen: Sequence[lanes.Lane],
        limit: int,
        lease_until_us: int | None,
    ) -> Chains[store.Claimed]:
        if chosen:
            self._read_gateways(conn)
        return store.take(conn, now_us, chosen, limit, lease_until_us, self._station)

    def _read_gateways(self, conn: Connection) -> None:
        """Read the gateways again where one changed (or was set, or is gone)."""
        changed = {channel: int(at) for channel, at in conn.execute(_CHANGED)}
        if changed == self._changed:
            return
        found: dict[str, Gateway] = {}
        for channel in changed:
            read = gateway(conn, self._key, channel)
            if read is not None:
                found[channel] = read
        self._gateways, self._changed = found, changed

    def record(self, conn: Connection, outcomes: Sequence[store.Outcome], now_us: int) -> None:
        store.record(conn, outcomes, now_us)

    def settle(self, conn: Connection, lane_ids: Collection[int]) -> set[int]:
        return store.settle(conn, lane_ids)

    def outcome(
        self,
        item: store.Claimed,
        attempts: int,
        attempt: delivery.Attempt,
        step: delivery.Step,
        now_us: int,
    ) -> store.Outcome:
        carried = item if item.collapsed else None
        metrics.NOTIFICATIONS.labels(item.channel, step.verdict).inc()
        if attempt.error == no_gateway(item.channel):  # waits for a gateway: not an attempt
            due = now_us + units.seconds_us(NO_GATEWAY_SECONDS)
            return store.Outcome(item.delivery_id, rules.QUEUED, item.attempts, attempt.error,
                                 due, carried)  # fmt: skip
        if step.verdict == delivery.SENT:
            return store.Outcome(item.delivery_id, rules.SENT, attempts, None, None, carried,
                                 now_us, item.rendered)  # fmt: skip
        if step.verdict == delivery.FAILED:
            return store.Outcome(item.delivery_id, rules.FAILED, attempts, attempt.error, None,
                                 carried, rendered=item.rendered)  # fmt: skip
        assert step.retry_in_seconds is not None
        due = now_us + units.seconds_us(step.retry_in_seconds)
        return store.Outcome(item.delivery_id, rules.QUEUED, attempts, attempt.error, due,
                             carried)  # fmt: skip

    def fields(self, item: store.Claimed) -> dict[str, Any]:
        return {"notification": item.delivery_id, "channel": item.channel,
                "account": item.account, "contact": item.target_id,
                "digest_of": len(item.collapsed)}  # fmt: skip

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        senders = [s for _, s in self._senders.values()] + self._retired
        self._senders, self._retired = {}, []
        for sender in senders:
            await sender.close()

    def _sender(self, channel: str) -> Sender | None:
        """The sender of ``channel``'s gateway as last read (a new one once it changed)."""
        gate = self._gateways.get(channel)
        kept = self._senders.get(channel)
        if kept is not None and kept[0] == gate:
            return kept[1]
        if kept is not None:
            self._retired.append(kept[1])  # closed at the end: it may be sending now
            del self._senders[channel]
        if gate is None:
            return None
        sender: Sender
        if channel == rules.EMAIL:
            server = SmtpServer.from_url(gate.url, starttls=gate.tls == rules.STARTTLS,
                                         user=gate.user, password=gate.password)  # fmt: skip
            sender = EmailSender(server)
        else:
            sender = SmsSender(SmsGateway(gate.url, gate.format or rules.TWILIO, gate.sender,
                                          gate.user or None, gate.password))  # fmt: skip
        self._senders[channel] = (gate, sender)
        return sender

    async def send(self, item: store.Claimed) -> delivery.Attempt:
        try:
            sender = self._sender(item.channel)
        except ValueError as exc:  # a gateway set before its checks: its error, till changed
            return delivery.retry(f"the {item.channel} gateway cannot be used: {exc}")
        if sender is None:
            return delivery.retry(no_gateway(item.channel))
        if isinstance(sender, EmailSender):
            gate = self._gateways[item.channel]
            sender_address = gate.sender or rules.default_sender(socket.getfqdn())
            email = Email(sender_address, item.to, item.subject, item.body, item.html or None)
            return await sender.send(email)
        return await sender.send(item.to, item.body)


class NotifyWorker(DeliveryWorker[store.Claimed, store.Outcome]):
    """Delivers the messages to subscribers while the node runs (:class:`~alarmhub.outbound.
    delivery.DeliveryWorker` with the :class:`NotifyChannel`)."""

    def __init__(
        self,
        engine: Engine,
        key: Fernet,
        station: tzinfo = UTC,
        *,
        poll_seconds: float = POLL_SECONDS,
        concurrency: int = CONCURRENCY,
        recorder: Recorder | None = None,
    ) -> None:
        super().__init__(engine, NotifyChannel(key, station), poll_seconds=poll_seconds,
                         concurrency=concurrency, per_target=PER_RECIPIENT,
                         recorder=recorder)  # fmt: skip
