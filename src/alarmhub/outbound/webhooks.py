"""Webhooks, the channel: what the one delivery worker (:mod:`alarmhub.outbound.delivery`)
needs to send webhooks. The deliveries themselves are made in the transaction that publishes
each event (:func:`alarmhub.store.events.publish_rows`); their lanes are one webhook's and one
account's (:mod:`alarmhub.store.webhooks`).

An attempt POSTs the event's body, signed (Standard Webhooks, :mod:`alarmhub.core.webhooks`),
through :mod:`alarmhub.outbound.webhook_http` (HTTP/1.1 on kept-alive connections), given
:data:`~alarmhub.core.webhooks.ATTEMPT_SECONDS` in all; any answer but a 2xx is a failure,
retried on the shared schedule (:mod:`alarmhub.core.delivery`). The worker runs in a process of
its own (:mod:`alarmhub.outbound.delivery_process`; the node's own loop when a node is embedded).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sequence
from typing import Any

import h11
from cryptography.fernet import Fernet
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.core import delivery, units, webhooks
from alarmhub.core.events import event_id_text
from alarmhub.outbound.delivery import (
    CONCURRENCY,
    PER_TARGET,
    POLL_SECONDS,
    STOP_SECONDS,
    Chains,
    DeliveryWorker,
    Recorder,
)
from alarmhub.outbound.webhook_http import WebhookHttp
from alarmhub.store import lanes
from alarmhub.store import webhooks as store

__all__ = ["STOP_SECONDS", "WebhookChannel", "WebhookWorker"]

log = logging.getLogger("alarmhub.webhooks")
ANSWER_READ_BYTES = 64 * 1024


class WebhookChannel:
    """Webhooks' deliveries in the store (their secrets decrypted with the station's ``key``),
    and the signed POST of one."""

    name = store.CHANNEL
    attempt_seconds = webhooks.ATTEMPT_SECONDS
    log = log

    def __init__(
        self, key: Fernet, idle_per_origin: int = PER_TARGET, allow_private: bool = False
    ) -> None:
        self._key = key
        self._idle_per_origin = idle_per_origin
        self._allow_private = allow_private
        self._client: WebhookHttp | None = None

    def take(
        self,
        conn: Connection,
        now_us: int,
        chosen: Sequence[lanes.Lane],
        limit: int,
        lease_until_us: int | None,
    ) -> Chains[store.Claimed]:
        return store.take(conn, self._key, now_us, chosen, limit, lease_until_us)

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
        if step.verdict == delivery.SENT:
            state, retry_at = webhooks.DELIVERED, None
        elif step.verdict == delivery.FAILED:
            state, retry_at = webhooks.FAILED, None
        else:
            assert step.retry_in_seconds is not None
            state, retry_at = webhooks.PENDING, now_us + units.seconds_us(step.retry_in_seconds)
        return store.Outcome(item.delivery_id, state, attempts, attempt.code, attempt.error,
                             retry_at)  # fmt: skip

    def fields(self, item: store.Claimed) -> dict[str, Any]:
        return {"webhook": item.webhook_id, "delivery": item.delivery_id,
                "event": event_id_text(item.event_id)}  # fmt: skip

    async def open(self) -> None:
        self._client = WebhookHttp(ANSWER_READ_BYTES, self._idle_per_origin, self._allow_private)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def send(self, item: store.Claimed) -> delivery.Attempt:
        if item.secret is None:
            return delivery.retry("the secret cannot be decrypted with this station's key")
        assert self._client is not None
        body = item.body
        sent = webhooks.headers(item.secret, event_id_text(item.event_id), int(time.time()), body)
        try:
            status = await self._client.post(item.url, list(sent.items()), body)
        except (h11.ProtocolError, OSError) as exc:
            return delivery.retry(f"{type(exc).__name__}: {exc}")
        if webhooks.delivered(status):
            return delivery.sent(status)
        return delivery.retry(f"answered HTTP {status}", status)


class WebhookWorker(DeliveryWorker[store.Claimed, store.Outcome]):
    """Delivers webhooks while the node runs (:class:`~alarmhub.outbound.delivery.
    DeliveryWorker` with the :class:`WebhookChannel`)."""

    def __init__(
        self,
        engine: Engine,
        key: Fernet,
        *,
        poll_seconds: float = POLL_SECONDS,
        concurrency: int = CONCURRENCY,
        per_webhook: int = PER_TARGET,
        allow_private: bool = False,
        recorder: Recorder | None = None,
    ) -> None:
        """``allow_private``: the setting ``webhook_allow_private`` (receivers on private
        addresses; otherwise a host that resolves to one is not connected to); ``recorder``:
        as :class:`~alarmhub.outbound.delivery.DeliveryWorker`'s."""
        channel = WebhookChannel(key, per_webhook, allow_private)
        super().__init__(engine, channel, poll_seconds=poll_seconds, concurrency=concurrency,
                         per_target=per_webhook, recorder=recorder)  # fmt: skip
