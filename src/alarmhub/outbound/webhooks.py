"""The node's webhook worker: it takes the deliveries that may go now, sends each (signed,
Standard Webhooks) and records how it ended. The deliveries themselves are made in the
transaction that publishes each event (:func:`alarmhub.store.events.publish_rows`).

It runs in the event loop of a process of its own (:mod:`alarmhub.outbound.webhook_process`;
the node's own loop when a node is embedded), off the signal path: the store's work runs in a
thread, never while a request is out; sending is :mod:`alarmhub.outbound.webhook_http`
(HTTP/1.1 on kept-alive connections) with a bounded number of requests in flight (and fewer to
any one webhook), each given :data:`~alarmhub.core.webhooks.ATTEMPT_SECONDS` in all. A receiver
that hangs holds only its own slots. Deliveries come in lanes (one webhook's and one account's,
:mod:`alarmhub.store.lanes`): each turn reads only the lanes that are due, and takes a chain of
each lane's first deliveries, sent one after the other; a chain stops at its first failure (the
rest wait for its retry, the other lanes go on). Once a chain ends, its lane is settled: due
again when its first pending delivery is (at once, or at that one's retry).

On SQLite this node is the only one delivering: taking deliveries is a read, what is in flight
or ended is held in memory, and outcomes are recorded (and lanes settled) in a batch every
:data:`RECORD_SECONDS`, so sending never waits for the database's write lock, which the signal
writer holds most. On a database shared by several nodes each turn records what ended, settles
lanes and claims the lanes it takes (a lease) in one short transaction, so each delivery is sent
by one node.
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
from collections.abc import Coroutine
from typing import Any

import h11
from cryptography.fernet import Fernet
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import units, webhooks
from alarmhub.core.events import event_id_text
from alarmhub.outbound.webhook_http import WebhookHttp
from alarmhub.store import webhooks as store
from alarmhub.store.engine import read_in_thread, write_transaction

log = logging.getLogger("alarmhub.webhooks")
POLL_SECONDS = 0.05
TURN_SECONDS = 0.02
"""Turns start at least this far apart (a chain's end wakes the worker at once, but a busy
worker reads the store at most this often)."""
RECORD_SECONDS = 0.2
"""The only node (SQLite): outcomes are recorded this often, in one transaction."""
CONCURRENCY = 64
"""Requests in flight at most, to every webhook together ..."""
PER_WEBHOOK = 32
"""... and to any one webhook (a receiver that hangs holds these, no more)."""
AHEAD = 16
"""Deliveries taken ahead of the requests, in multiples of those limits: sending goes on while a
turn of the store runs. A claim (several nodes) whose lease would run out before its attempt
ends, as it waited behind a slow receiver's, is not sent but given back."""
LEASE_SECONDS = 60.0
ANSWER_READ_BYTES = 64 * 1024
STOP_SECONDS = 5.0


class WebhookWorker:
    """Delivers webhooks while the node runs: :meth:`start` in the runtime's start,
    :meth:`stop` in its end (requests in flight are abandoned: sent again at the next start, or
    by whichever node claims them next)."""

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
        self._shared = engine.dialect.name != "sqlite"
        self._poll = poll_seconds
        self._concurrency = concurrency
        self._per_webhook = per_webhook
        self.node = f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"
        self._in_flight: dict[int, store.Claimed] = {}  # by delivery id: taken, not ended
        self._ended: dict[int, store.Outcome] = {}  # attempted, not recorded yet
        self._recorded: set[int] = set()  # recorded since the last turn (the only node)
        self._to_settle: set[int] = set()  # lanes whose chains ended (or had none), held
        self._settled: set[int] = set()  # lanes settled since the last turn (the only node)
        self._slots = asyncio.Semaphore(concurrency)
        self._webhook_slots: dict[int, asyncio.Semaphore] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._client: WebhookHttp | None = None

    async def start(self) -> None:
        self._client = WebhookHttp(ANSWER_READ_BYTES, self._per_webhook)
        self._spawn(self._run(), "webhooks")
        if not self._shared:
            self._spawn(self._record_now_and_then(), "webhook records")

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._client is not None:
            await self._client.close()
        try:
            await asyncio.wait_for(asyncio.to_thread(self._finish), STOP_SECONDS)
        except Exception as exc:  # sent again after the restart, or when the leases run out
            log.warning("webhook outcomes not recorded", extra={"error": repr(exc)})

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _finish(self) -> None:
        outcomes = list(self._ended.values())
        with write_transaction(self._engine) as conn:
            store.record(conn, outcomes, now_us())
            store.settle(conn, self._to_settle)
            if self._shared:
                store.release(conn, self.node)
        self._ended.clear()
        self._to_settle.clear()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                await self._turn()
            except Exception as exc:
                log.warning("webhook turn failed", extra={"error": repr(exc)})
                await asyncio.sleep(1.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll)
            self._wake.clear()
            await asyncio.sleep(max(0.0, started + TURN_SECONDS - loop.time()))

    async def _turn(self) -> None:
        free = AHEAD * self._concurrency - len(self._in_flight)
        busy = Counter(d.webhook_id for d in self._in_flight.values())
        full = {hook for hook, n in busy.items() if n >= AHEAD * self._per_webhook}
        if self._shared:
            chains = await self._claim_turn(max(free, 0), full)
        else:
            chains = await self._read_turn(max(free, 0), full)
        for chain in chains:
            for delivery in chain:
                self._in_flight[delivery.delivery_id] = delivery
            self._spawn(self._send_chain(chain), "webhook chain")

    def _held(self) -> set[int]:
        """The lanes this node holds: sending, or to settle."""
        return {d.lane_id for d in self._in_flight.values()} | self._to_settle

    async def _read_turn(self, free: int, full: set[int]) -> list[list[store.Claimed]]:
        """The only node: what may go now, read, but in the lanes this node holds (an outcome
        or a lane is held until a turn that starts after it is recorded, or settled)."""
        for delivery_id in self._recorded:
            self._ended.pop(delivery_id, None)
        self._to_settle -= self._settled
        self._recorded, self._settled = set(), set()
        if free <= 0:
            return []
        held = self._held()

        def take(conn: Connection) -> store.Taken:
            now = now_us()
            chosen = store.due_lanes(conn, now, free, held=held, skip_webhooks=full)
            return store.take(conn, self._key, now, chosen, free)

        taken = await read_in_thread(self._engine, take)
        self._to_settle.update(taken.idle)
        return taken.chains

    async def _record_now_and_then(self) -> None:
        """The only node: record what ended and settle the lanes whose chains ended, every
        RECORD_SECONDS, in one transaction."""
        while True:
            await asyncio.sleep(RECORD_SECONDS)
            outcomes = [o for i, o in self._ended.items() if i not in self._recorded]
            lanes = self._to_settle - self._settled
            if not outcomes and not lanes:
                continue
            try:
                settled = await asyncio.to_thread(self._record, outcomes, lanes)
            except Exception as exc:
                log.warning("webhook outcomes not recorded; will retry", extra={"error": repr(exc)})
                continue
            self._recorded.update(o.delivery_id for o in outcomes)
            self._settled |= settled

    def _record(self, outcomes: list[store.Outcome], lanes: set[int]) -> set[int]:
        with write_transaction(self._engine) as conn:
            store.record(conn, outcomes, now_us())
            return store.settle(conn, lanes)

    async def _claim_turn(self, free: int, full: set[int]) -> list[list[store.Claimed]]:
        """Several nodes: record what ended, settle the lanes whose chains ended, claim lanes
        that are due, in one transaction (only when there is something to do: a read says);
        then read what the lanes claimed may send."""
        outcomes, self._ended = self._ended, {}
        lanes = set(self._to_settle)
        held = self._held()
        lease = units.seconds_us(LEASE_SECONDS)

        def turn() -> tuple[set[int], store.Taken]:
            if not outcomes and not lanes:
                with self._engine.connect() as conn:
                    if free <= 0 or not store.due_lanes(conn, now_us(), 1, held=held):
                        return set(), store.Taken([], [])
            with write_transaction(self._engine) as conn:
                now = now_us()
                store.record(conn, list(outcomes.values()), now)
                settled = store.settle(conn, lanes)
                chosen = store.due_lanes(conn, now, free, held=held, skip_webhooks=full,
                                         claim=(self.node, lease))  # fmt: skip
            with self._engine.connect() as conn:  # the lanes are this node's: no lock needed
                return settled, store.take(conn, self._key, now, chosen, free, now + lease)

        try:
            settled, taken = await asyncio.to_thread(turn)
        except BaseException:
            self._ended = {**outcomes, **self._ended}  # recorded at the next turn
            raise
        self._to_settle -= settled
        self._to_settle.update(taken.idle)
        return taken.chains

    async def _send_chain(self, chain: list[store.Claimed]) -> None:
        """Send one lane's deliveries in order, each once the one before is delivered; then
        the lane is to be settled (due again when its first pending delivery is)."""
        try:
            for n, delivery in enumerate(chain):
                try:
                    attempted = await self._attempt(delivery)
                except asyncio.CancelledError:  # the node stops: sent again after
                    self._give_back(chain[n:])
                    raise
                except Exception as exc:
                    attempted = None, repr(exc)
                if attempted is None:  # its lease would run out: another node may claim it
                    self._give_back(chain[n:])
                    break
                outcome = self._outcome(delivery, *attempted)
                self._ended[delivery.delivery_id] = outcome
                self._in_flight.pop(delivery.delivery_id, None)
                if outcome.state != webhooks.DELIVERED:
                    self._give_back(chain[n + 1 :])
                    break
        finally:
            self._to_settle.add(chain[0].lane_id)
        self._wake.set()

    def _give_back(self, deliveries: list[store.Claimed]) -> None:
        for delivery in deliveries:
            self._in_flight.pop(delivery.delivery_id, None)

    async def _attempt(self, delivery: store.Claimed) -> tuple[int | None, str | None] | None:
        """How the attempt ended; None when it was not made: the claim's lease would run out
        before the attempt could end (claims wait their turn behind a slow receiver's), so it
        is given back, never sent by two nodes at once."""
        hook = self._webhook_slots.get(delivery.webhook_id)
        if hook is None:
            hook = self._webhook_slots[delivery.webhook_id] = asyncio.Semaphore(self._per_webhook)
        async with hook, self._slots:
            lease = delivery.lease_until_us
            if lease is not None and now_us() + units.seconds_us(webhooks.ATTEMPT_SECONDS) >= lease:
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
