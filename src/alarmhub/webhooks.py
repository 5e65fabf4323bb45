"""The node's webhook worker: it fans new events out to the webhooks that want them, claims the
deliveries that are due, sends each (signed, Standard Webhooks) and records how it ended.

It runs in the node's event loop, off the signal path: the store's work is short transactions in
a thread, never held while a request is out; sending is :mod:`alarmhub.webhook_http` (HTTP/1.1
on kept-alive connections) with a bounded number of requests in flight (and fewer to any one
webhook), each given :data:`~alarmhub.core.webhooks.ATTEMPT_SECONDS` in all. A receiver that
hangs holds only its own slots. Several nodes share the work through leases on the deliveries
they claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import socket
import time
from collections import Counter

import h11
from cryptography.fernet import Fernet
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import units, webhooks
from alarmhub.core.events import event_id_text
from alarmhub.store import webhooks as store
from alarmhub.store.engine import write_transaction
from alarmhub.webhook_http import WebhookHttp

log = logging.getLogger("alarmhub.webhooks")
POLL_SECONDS = 0.1
CONCURRENCY = 64
"""Requests in flight at most, to every webhook together ..."""
PER_WEBHOOK = 32
"""... and to any one webhook (a receiver that hangs holds these, no more)."""
AHEAD = 16
"""Deliveries claimed ahead of the requests, in multiples of those limits: sending goes on
while a turn of the store runs. A claim that waited behind a slow receiver's until its lease
would run out before its attempt ends is not sent (it is claimed again later)."""
LEASE_SECONDS = 60.0
ANSWER_READ_BYTES = 64 * 1024
STOP_SECONDS = 5.0


class WebhookWorker:
    """Delivers webhooks while the node runs: :meth:`start` in the runtime's start,
    :meth:`stop` in its end (requests in flight are abandoned; their deliveries are released
    and sent again, by whichever node claims them next)."""

    def __init__(
        self,
        engine: Engine,
        key: Fernet,
        *,
        poll_seconds: float = POLL_SECONDS,
        concurrency: int = CONCURRENCY,
        per_webhook: int = PER_WEBHOOK,
    ) -> None:
        self._engine = engine
        self._key = key
        self._poll = poll_seconds
        self._concurrency = concurrency
        self._per_webhook = per_webhook
        self.node = f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"
        self._in_flight: dict[int, int] = {}  # delivery id -> webhook id, claimed, not ended
        self._slots = asyncio.Semaphore(concurrency)
        self._webhook_slots: dict[int, asyncio.Semaphore] = {}
        self._done: list[store.Outcome] = []
        self._sends: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._client: WebhookHttp | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._client = WebhookHttp(ANSWER_READ_BYTES, self._per_webhook)
        self._task = asyncio.create_task(self._run(), name="webhooks")

    async def stop(self) -> None:
        tasks = [*self._sends, *([self._task] if self._task else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._client is not None:
            await self._client.close()
        try:
            await asyncio.wait_for(asyncio.to_thread(self._finish), STOP_SECONDS)
        except Exception as exc:  # the leases run out instead
            log.warning("webhook claims not released", extra={"error": repr(exc)})

    def _finish(self) -> None:
        with write_transaction(self._engine) as conn:
            store.record(conn, self._done, now_us())
            store.release(conn, self.node)
        self._done = []

    async def _run(self) -> None:
        while True:
            try:
                await self._turn()
            except Exception as exc:
                log.warning("webhook turn failed", extra={"error": repr(exc)})
                await asyncio.sleep(1.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll)
            self._wake.clear()

    async def _turn(self) -> None:
        outcomes, self._done = self._done, []
        free = AHEAD * self._concurrency - len(self._in_flight)
        busy = Counter(self._in_flight.values())
        full = [hook for hook, n in busy.items() if n >= AHEAD * self._per_webhook]
        try:
            claimed, more = await asyncio.to_thread(self._store_turn, outcomes, free, full)
        except BaseException:
            self._done[:0] = outcomes  # recorded at the next turn
            raise
        if more:
            self._wake.set()
        for delivery in claimed:
            self._in_flight[delivery.delivery_id] = delivery.webhook_id
            task = asyncio.create_task(self._send(delivery), name="webhook send")
            self._sends.add(task)
            task.add_done_callback(self._sends.discard)

    def _store_turn(
        self, outcomes: list[store.Outcome], free: int, full: list[int]
    ) -> tuple[list[store.Claimed], bool]:
        """Record what ended, fan out, claim what is due: one short transaction (in a thread),
        only when there is something to do; and whether more is left to fan out."""
        with self._engine.connect() as conn:
            to_fan_out, due = store.behind(conn, now_us())
        if not outcomes and not to_fan_out and not (due and free > 0):
            return [], False
        with write_transaction(self._engine) as conn:
            now = now_us()
            store.record(conn, outcomes, now)
            made = store.fan_out(conn, now) if to_fan_out else 0
            claimed = []
            if free > 0 and (due or made or outcomes):
                lease = units.seconds_us(LEASE_SECONDS)
                claimed = store.claim(conn, self._key, self.node, now, lease, free, full)
        return claimed, to_fan_out

    async def _send(self, delivery: store.Claimed) -> None:
        try:
            attempted = await self._attempt(delivery)
            if attempted is None:  # its lease ran out while it waited: another node may hold it
                self._in_flight.pop(delivery.delivery_id, None)
                return
            status, error = attempted
        except asyncio.CancelledError:  # the node stops: the claim is released, not recorded
            self._in_flight.pop(delivery.delivery_id, None)
            raise
        except Exception as exc:
            status, error = None, repr(exc)
        self._done.append(self._outcome(delivery, status, error))
        self._in_flight.pop(delivery.delivery_id, None)
        self._wake.set()

    async def _attempt(self, delivery: store.Claimed) -> tuple[int | None, str | None] | None:
        """How the attempt ended; None when it was not made: the claim's lease would run out
        before the attempt could end (claims wait their turn behind a slow receiver's), so it
        is left to be claimed again, never sent twice at once."""
        hook = self._webhook_slots.get(delivery.webhook_id)
        if hook is None:
            hook = self._webhook_slots[delivery.webhook_id] = asyncio.Semaphore(self._per_webhook)
        async with hook, self._slots:
            if now_us() + units.seconds_us(webhooks.ATTEMPT_SECONDS) >= delivery.lease_until_us:
                return None
            return await self._request(delivery)

    async def _request(self, delivery: store.Claimed) -> tuple[int | None, str | None]:
        if delivery.secret is None:
            return None, "the secret cannot be decrypted with this station's key"
        assert self._client is not None
        body = delivery.body
        sent = webhooks.headers(delivery.secret, event_id_text(delivery.event_id),
                                int(time.time()), body)  # fmt: skip
        try:
            async with asyncio.timeout(webhooks.ATTEMPT_SECONDS):
                return await self._client.post(delivery.url, list(sent.items()), body), None
        except TimeoutError:
            return None, f"no answer within {webhooks.ATTEMPT_SECONDS:g} s"
        except h11.ProtocolError as exc:
            return None, f"{type(exc).__name__}: {exc}"
        except OSError as exc:
            return None, f"{type(exc).__name__}: {exc}"

    def _outcome(
        self, delivery: store.Claimed, status: int | None, error: str | None
    ) -> store.Outcome:
        attempts = delivery.attempts + 1
        fields = {"webhook": delivery.webhook_id, "delivery": delivery.delivery_id,
                  "event": event_id_text(delivery.event_id), "attempts": attempts}  # fmt: skip
        if webhooks.delivered(status):
            log.debug("webhook delivered", extra=fields)
            return store.Outcome(delivery.delivery_id, webhooks.DELIVERED, attempts, status,
                                 None, None)  # fmt: skip
        error = webhooks.error_text(error or f"answered HTTP {status}")
        delay = webhooks.retry_delay(attempts, random.random)
        if delay is None:
            log.warning("webhook delivery failed", extra={**fields, "error": error})
            return store.Outcome(delivery.delivery_id, webhooks.FAILED, attempts, status, error,
                                 None)  # fmt: skip
        log.info("webhook attempt failed", extra={**fields, "error": error, "retry_s": delay})
        return store.Outcome(delivery.delivery_id, webhooks.PENDING, attempts, status, error,
                             now_us() + units.seconds_us(delay))  # fmt: skip
