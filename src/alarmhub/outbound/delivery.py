"""The one delivery worker, whatever the channel (webhooks, email, SMS): it takes the deliveries
that may go now, has the channel send each, and records how each attempt ended on the retry
schedule every channel shares (:mod:`alarmhub.core.delivery`). The deliveries themselves are
made in the transaction that writes what they tell of (an event, a notification).

A :class:`Channel` gives what differs: its store's reading (:meth:`Channel.take`) and recording
(:meth:`Channel.record`) and the send of one delivery (:meth:`Channel.send`). Everything else
lives here once. Deliveries come in lanes (one target's and one key's,
:mod:`alarmhub.store.lanes`): each turn reads only the lanes that are due, and takes a chain of
each lane's first deliveries, sent one after the other; a chain stops at its first failure (the
rest wait for its retry, the other lanes go on). Once a chain ends, its lane is settled: due
again when its first pending delivery is (at once, or at that one's retry). Attempts in flight
are bounded in all and to any one target (a target that hangs holds only its own slots), each
given :attr:`Channel.attempt_seconds`. It runs in an event loop off the signal path: the
store's work runs in a thread, never while an attempt is out.

On SQLite this node is the only one delivering: taking deliveries is a read, what is in flight
or ended is held in memory, and every :data:`RECORD_SECONDS` the outcomes (and the lanes to
settle) are handed to the node's signal writer (a :class:`Recorder`), which holds the database's
one write lock anyway and records them between its commits: sending never waits for that lock,
and no signal's commit waits behind a recording. On a database shared by several nodes each
turn records what ended, settles lanes and claims the lanes it takes (a lease) in one short
transaction, so each delivery is sent by one node.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import secrets
import socket
from collections import Counter
from collections.abc import Collection, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import delivery, units
from alarmhub.store import lanes
from alarmhub.store.engine import read_in_thread, write_transaction
from alarmhub.wake import woken

POLL_SECONDS = 0.05
TURN_SECONDS = 0.02
"""Turns start at least this far apart (a chain's end wakes the worker at once, but a busy
worker reads the store at most this often)."""
RECORD_SECONDS = 0.2
"""The only node (SQLite): outcomes are handed to the node's writer this often (a
:class:`Recorder`; the writer records them in steps of its own: ``store.recording``)."""
CONCURRENCY = 64
"""Attempts in flight at most, to every target together ..."""
PER_TARGET = 32
"""... and to any one target (one that hangs holds these, no more)."""
AHEAD = 16
"""Deliveries taken ahead of the attempts, in multiples of those limits: sending goes on while
a turn of the store runs. A claim (several nodes) whose lease would run out before its attempt
ends, as it waited behind a slow target's, is not sent but given back."""
LEASE_SECONDS = 60.0
STOP_SECONDS = 5.0


def claimant() -> str:
    """A name, unique to this process and this call, under which a worker claims lanes."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"


class Item(Protocol):
    """A delivery taken by this node, as the worker sees it (the channel's has what it sends)."""

    @property
    def delivery_id(self) -> int: ...
    @property
    def lane_id(self) -> int: ...
    @property
    def target_id(self) -> int: ...
    @property
    def attempts(self) -> int: ...  # before this one
    @property
    def lease_until_us(self) -> int | None: ...  # then another node may claim it (None: none)


ItemT = TypeVar("ItemT", bound=Item)
OutcomeT = TypeVar("OutcomeT")
Chains = tuple[list[list[ItemT]], list[int]]
"""What a channel's take hands out: chains (each one lane's deliveries, in order) and the lanes
given that hand out nothing now (to settle)."""


class Channel(Protocol[ItemT, OutcomeT]):
    """What differs between channels: where their deliveries are, how one is sent."""

    name: str
    """Its lanes' channel (:mod:`alarmhub.store.lanes`); in log messages too."""
    attempt_seconds: float
    """An attempt that has not ended by then is a failure (a timeout), retried."""
    log: logging.Logger

    def take(
        self,
        conn: Connection,
        now_us: int,
        chosen: Sequence[lanes.Lane],
        limit: int,
        lease_until_us: int | None,
    ) -> Chains[ItemT]:
        """The deliveries of the ``chosen`` lanes that may go now, ``limit`` at most."""
        ...

    def record(self, conn: Connection, outcomes: Sequence[OutcomeT], now_us: int) -> None:
        """Record attempts (their lanes are settled after)."""
        ...

    def settle(self, conn: Connection, lane_ids: Collection[int]) -> set[int]:
        """Make lanes due when their first pending delivery is and free their claims; the lanes
        settled (:func:`alarmhub.store.lanes.settle`)."""
        ...

    def outcome(self, item: ItemT, attempts: int, attempt: delivery.Attempt,
                step: delivery.Step, now_us: int) -> OutcomeT:  # fmt: skip
        """What :meth:`record` stores of an ended attempt (the ``attempts``-th)."""
        ...

    def fields(self, item: ItemT) -> dict[str, Any]:
        """What a log line names of a delivery (never a secret)."""
        ...

    async def open(self) -> None:
        """Before the first send (a client, its connections)."""
        ...

    async def close(self) -> None:
        """After the last send."""
        ...

    async def send(self, item: ItemT) -> delivery.Attempt:
        """Make one attempt (the worker bounds its time)."""
        ...


@dataclass
class Recorded:
    """What a recording has committed: deliveries by id, lanes settled."""

    outcomes: set[int] = field(default_factory=set)
    lanes: set[int] = field(default_factory=set)


class Recorder(Protocol):
    """Records how deliveries ended for the only node (SQLite) in another process, which holds
    the database's write lock anyway: the node's writer (:mod:`alarmhub.outbound.
    writer_records`)."""

    async def record(
        self, channel: str, ended: Sequence[tuple[int, Any]], lane_ids: Sequence[int],
        done: Recorded,
    ) -> None:  # fmt: skip
        """Record ``ended`` (delivery id, outcome) of ``channel``, then settle ``lane_ids``;
        what has committed is added to ``done`` (an exception for the rest)."""
        ...


class DeliveryWorker(Generic[ItemT, OutcomeT]):
    """Delivers one channel's deliveries while the node runs: :meth:`start` in the runtime's
    start, :meth:`stop` in its end (attempts in flight are abandoned: sent again at the next
    start, or by whichever node claims them next)."""

    def __init__(
        self,
        engine: Engine,
        channel: Channel[ItemT, OutcomeT],
        *,
        poll_seconds: float = POLL_SECONDS,
        concurrency: int = CONCURRENCY,
        per_target: int = PER_TARGET,
        recorder: Recorder | None = None,
    ) -> None:
        """``recorder``: who records outcomes for the only node (SQLite), where it is required;
        on a shared database each turn records its own, with its claims."""
        self._engine = engine
        self.channel = channel
        self._shared = engine.dialect.name != "sqlite"
        if recorder is None and not self._shared:
            raise ValueError("the only node's deliveries are recorded by its writer: a recorder")
        self._recorder = recorder
        self._poll = poll_seconds
        self._concurrency = concurrency
        self._per_target = per_target
        self.node = claimant()
        """The name it claims lanes under (several nodes)."""
        self._in_flight: dict[int, ItemT] = {}  # by delivery id: taken, not ended
        self._ended: dict[int, OutcomeT] = {}  # attempted, not recorded yet
        self._recorded: set[int] = set()  # recorded since the last turn (the only node)
        self._to_settle: set[int] = set()  # lanes whose chains ended (or had none), held
        self._settled: set[int] = set()  # lanes settled since the last turn (the only node)
        self._slots = asyncio.Semaphore(concurrency)
        self._target_slots: dict[int, asyncio.Semaphore] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._full = False  # the last turn had no room for more: a chain's end wakes the next

    async def start(self) -> None:
        await self.channel.open()
        self._spawn(self._run(), f"{self.channel.name} deliveries")
        if not self._shared:
            self._spawn(self._record_now_and_then(), f"{self.channel.name} records")

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.channel.close()
        try:
            await asyncio.wait_for(asyncio.to_thread(self._finish), STOP_SECONDS)
        except Exception as exc:  # sent again after the restart, or when the leases run out
            self.channel.log.warning("outcomes not recorded", extra={"error": repr(exc)})

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _finish(self) -> None:
        outcomes = list(self._ended.values())
        with write_transaction(self._engine) as conn:
            self.channel.record(conn, outcomes, now_us())
            self.channel.settle(conn, self._to_settle)
            if self._shared:
                lanes.release(conn, self.node, self.channel.name)
        self._ended.clear()
        self._to_settle.clear()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                await self._turn()
            except Exception as exc:
                self.channel.log.warning("delivery turn failed", extra={"error": repr(exc)})
                await asyncio.sleep(1.0)
            await woken(self._wake, self._poll)
            self._wake.clear()
            await asyncio.sleep(max(0.0, started + TURN_SECONDS - loop.time()))

    async def _turn(self) -> None:
        free = AHEAD * self._concurrency - len(self._in_flight)
        self._full = free <= 0
        busy = Counter(d.target_id for d in self._in_flight.values())
        full = {target for target, n in busy.items() if n >= AHEAD * self._per_target}
        if self._shared:
            chains = await self._claim_turn(max(free, 0), full)
        else:
            chains = await self._read_turn(max(free, 0), full)
        for chain in chains:
            for item in chain:
                self._in_flight[item.delivery_id] = item
            self._spawn(self._send_chain(chain), f"{self.channel.name} chain")

    def _held(self) -> set[int]:
        """The lanes this node holds: sending, or to settle."""
        return {d.lane_id for d in self._in_flight.values()} | self._to_settle

    def _due(
        self,
        conn: Connection,
        now: int,
        limit: int,
        held: Collection[int],
        full: Collection[int] = (),
        lease_us: int | None = None,
    ) -> list[lanes.Lane]:
        """This channel's lanes that are due (:func:`alarmhub.store.lanes.choose`), claimed by
        this node for ``lease_us`` when given (several nodes)."""
        lease = None if lease_us is None else (self.node, lease_us)
        return lanes.choose(conn, self.channel.name, now, limit, held=held, skip_targets=full,
                            lease=lease)  # fmt: skip

    async def _read_turn(self, free: int, full: set[int]) -> list[list[ItemT]]:
        """The only node: what may go now, read, but in the lanes this node holds (an outcome
        or a lane is held until a turn that starts after it is recorded, or settled)."""
        for delivery_id in self._recorded:
            self._ended.pop(delivery_id, None)
        self._to_settle -= self._settled
        self._recorded, self._settled = set(), set()
        if free <= 0:
            return []
        held = self._held()

        def take(conn: Connection) -> Chains[ItemT]:
            now = now_us()
            chosen = self._due(conn, now, free, held, full)
            return self.channel.take(conn, now, chosen, free, None)

        chains, idle = await read_in_thread(self._engine, take)
        self._to_settle.update(idle)
        return chains

    async def _record_now_and_then(self) -> None:
        """The only node: have the writer record what ended and settle the lanes whose chains
        ended, every RECORD_SECONDS."""
        failing = 0  # tries that failed in a row
        while True:
            await asyncio.sleep(RECORD_SECONDS)
            ended = [(i, o) for i, o in self._ended.items() if i not in self._recorded]
            lane_ids = sorted(self._to_settle - self._settled)
            if not ended and not lane_ids:
                continue
            done = Recorded()
            assert self._recorder is not None  # the only node has one (__init__)
            try:
                await self._recorder.record(self.channel.name, ended, lane_ids, done)
            except Exception as exc:
                failing += 1  # said once, until they are recorded again (the writer restarts)
                level = logging.WARNING if failing == 1 else logging.DEBUG
                self.channel.log.log(level, "outcomes not recorded; will retry",
                                     extra={"error": repr(exc)})  # fmt: skip
            else:
                if failing:
                    self.channel.log.info("outcomes recorded again", extra={"tries": failing})
                failing = 0
            self._recorded |= done.outcomes  # what committed, the rest failing or not
            self._settled |= done.lanes
            if done.lanes:  # due again: taken at once, not at the next poll
                self._wake.set()

    async def _claim_turn(self, free: int, full: set[int]) -> list[list[ItemT]]:
        """Several nodes: record what ended, settle the lanes whose chains ended, claim lanes
        that are due, in one transaction (only when there is something to do: a read says);
        then read what the lanes claimed may send."""
        outcomes, self._ended = self._ended, {}
        lane_ids = set(self._to_settle)
        held = self._held()
        lease = units.seconds_us(LEASE_SECONDS)

        def turn() -> tuple[set[int], Chains[ItemT]]:
            if not outcomes and not lane_ids:
                with self._engine.connect() as conn:
                    if free <= 0 or not self._due(conn, now_us(), 1, held):
                        return set(), ([], [])
            with write_transaction(self._engine) as conn:
                now = now_us()
                self.channel.record(conn, list(outcomes.values()), now)
                settled = self.channel.settle(conn, lane_ids)
                chosen = self._due(conn, now, free, held, full, lease)
            with self._engine.connect() as conn:  # the lanes are this node's: no lock needed
                return settled, self.channel.take(conn, now, chosen, free, now + lease)

        try:
            settled, (chains, idle) = await asyncio.to_thread(turn)
        except BaseException:
            self._ended = {**outcomes, **self._ended}  # recorded at the next turn
            raise
        self._to_settle -= settled
        self._to_settle.update(idle)
        return chains

    async def _send_chain(self, chain: list[ItemT]) -> None:
        """Send one lane's deliveries in order, each once the one before is sent; then the
        lane is to be settled (due again when its first pending delivery is)."""
        try:
            for n, item in enumerate(chain):
                try:
                    attempt = await self._attempt(item)
                except asyncio.CancelledError:  # the node stops: sent again after
                    self._give_back(chain[n:])
                    raise
                except Exception as exc:
                    attempt = delivery.retry(repr(exc))
                if attempt is None:  # its lease would run out: another node may claim it
                    self._give_back(chain[n:])
                    break
                verdict = self._end(item, attempt)
                self._in_flight.pop(item.delivery_id, None)
                if verdict != delivery.SENT:
                    self._give_back(chain[n + 1 :])
                    break
        finally:
            self._to_settle.add(chain[0].lane_id)
        if self._full:  # room again (otherwise its lane is due again once settled: the poll)
            self._wake.set()

    def _give_back(self, items: list[ItemT]) -> None:
        for item in items:
            self._in_flight.pop(item.delivery_id, None)

    async def _attempt(self, item: ItemT) -> delivery.Attempt | None:
        """How the attempt ended; None when it was not made: the claim's lease would run out
        before the attempt could end (claims wait their turn behind a slow target's), so it is
        given back, never sent by two nodes at once."""
        slots = self._target_slots.get(item.target_id)
        if slots is None:
            slots = self._target_slots[item.target_id] = asyncio.Semaphore(self._per_target)
        seconds = self.channel.attempt_seconds
        async with slots, self._slots:
            lease = item.lease_until_us
            if lease is not None and now_us() + units.seconds_us(seconds) >= lease:
                return None
            try:
                async with asyncio.timeout(seconds):
                    return await self.channel.send(item)
            except TimeoutError:
                return delivery.retry(f"no answer within {seconds:g} s")

    def _end(self, item: ItemT, attempt: delivery.Attempt) -> str:
        """Hold how an attempt ended, to be recorded; its step's verdict."""
        attempts = item.attempts + 1
        step = delivery.next_step(attempt, attempts, random.random)
        now = now_us()
        self._ended[item.delivery_id] = self.channel.outcome(item, attempts, attempt, step, now)
        fields = {**self.channel.fields(item), "attempts": attempts}
        name = self.channel.name
        if step.verdict == delivery.SENT:
            self.channel.log.debug(f"{name} delivered", extra=fields)
        elif step.verdict == delivery.FAILED:
            self.channel.log.warning(f"{name} delivery failed",
                                     extra={**fields, "error": attempt.error})  # fmt: skip
        else:
            self.channel.log.info(f"{name} attempt failed",
                                  extra={**fields, "error": attempt.error,
                                         "retry_s": step.retry_in_seconds})  # fmt: skip
        return step.verdict
