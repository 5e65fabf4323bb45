"""The writer process: the one place a node writes signals, and where they are processed.

It reads batches of signals from its parent over a socket, merges every batch that is waiting
into one transaction (one fsync), and answers with the incident numbers once that transaction is
committed. Between commits it routes the committed signals in order (pending alarms, history,
the automation outputs' frames: the node is told when a routing committed frames, so that its
idle senders read them at once) and, every second, runs the supervision checks (fail to test,
heartbeat loss). It runs apart from the HTTP process so that database work never waits for,
nor holds up, the event loop's interpreter lock. It exits when its parent's end of the socket
closes, after finishing the commit in progress; SIGINT and SIGTERM are left to the parent. A
database call that never returns (a silent connection) ends it (``store.watchdog``).

:class:`WriterThread` runs the same loop, on the same socket and frames, in a thread of the
node's own process instead (``SignalWriter(start_writer=WriterThread.start)``): for a node
embedded in another program, such as tests that call its app in-process. It leaves the
process's logging, signals, umask and garbage collector as they are.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from alarmhub import files, logs
from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.core.router import StoredSignal
from alarmhub.core.signal import Signal
from alarmhub.gc_tuning import quiet_garbage_collector
from alarmhub.settings import station_zone
from alarmhub.store import events, framing, recording, sqlite
from alarmhub.store.commit import (
    SignalInsert,
    Stored,
    commit_signals,
    forget_keys,
    from_wire,
    store_plain,
)
from alarmhub.store.engine import WriteConnection, open_engine, unavailable
from alarmhub.store.recording import Handed
from alarmhub.store.retry_keys import RetryKeys
from alarmhub.store.routing import ROUTE_BATCH, SignalRouting
from alarmhub.store.supervision import Supervision
from alarmhub.store.watchdog import Watchdog
from alarmhub.store.writer_channels import Channel, Channels, read_available, wait_readable

log = logging.getLogger("alarmhub.writer")
SUPERVISE_SECONDS = 1.0
ROUTE_ON_EXIT_BATCHES = 20
ROUTE_MAX_DELAY = 0.02
ROUTE_MIN_DELAY = 0.005
ROUTE_MIN_INTERVAL = 0.005
ROUTE_SLICE = 32


def _configuration(sock: socket.socket, buffer: bytearray) -> dict[str, Any] | None:
    """The first frame from the parent: database URL and limits (never on the command line,
    where other users of the machine could read a password); None when the parent closed its
    end first."""
    while True:
        messages = framing.decode_all(buffer)
        if messages:
            config: dict[str, Any] = messages[0]
            return config
        wait_readable(sock, None)
        if not read_available(sock, buffer):
            return None


class WriterLoop:
    """Group commits that also route what they store; catching up on unrouted signals and
    supervision in between."""

    def __init__(
        self,
        sock: socket.socket,
        config: dict[str, Any],
        buffer: bytearray,
        *,
        channels: Channels | None = None,
    ) -> None:
        self._sock = sock
        # the signals' commits, and routing and supervision, which are derived from what is
        # stored and committed without waiting for the disk (``durable=False``)
        stuck = config.get("stuck_seconds")  # the server ends a session left in a transaction
        self._conn = WriteConnection(
            open_engine(config["url"], writer=True, idle_in_transaction_seconds=stuck)
        )
        self._max_batch = int(config["max_batch"])
        self._statement = SignalInsert(self._conn.engine)
        self._window_us = units.hours_us(int(config["idempotency_hours"]))
        # token names whose keys have a window of their own (the DC-09 retry window), in seconds
        self._key_windows_us = {
            name: units.seconds_us(int(seconds)) for name, seconds in config["key_windows"].items()
        }
        self._routing = SignalRouting(
            self._conn.engine,
            runaway_limit=int(config["runaway_limit"]),
            runaway_minutes=int(config["runaway_minutes"]),
        )
        # on SQLite this writer is the only one: it remembers the DC-09 retry keys itself
        self._retry_keys = None if self._routing.shared else RetryKeys(self._key_windows_us)
        self._supervision = Supervision(
            self._conn.engine,
            test_grace_s=int(config["test_grace_minutes"]) * 60,
            station_zone=station_zone(config.get("timezone", "")),
            cache=self._routing.cache,
        )
        self._buffer = buffer
        self._waiting: list[list[Any]] = []
        self._open = True
        self._backlog = True  # committed signals may be unrouted (a crash, a failed routing)
        self._route_due = True
        self._last_route = 0.0
        self._routing_failed = False
        # committed and answered, to be routed from memory (SQLite), oldest first; since when
        self._unrouted: list[StoredSignal] = []
        self._unrouted_since = 0.0
        self._next_supervision = time.monotonic()
        self._leader = bool(config.get("leader", True))  # the parent says when it changes
        self._checkpoint_due = False  # the node asked for a checkpoint of the SQLite log
        # how deliveries ended, handed over by the delivery process to record; since when
        self._handed: deque[Handed] = deque()
        self._handed_since = 0.0
        # the parent's channel, and the workers' when the node has several (writer_channels)
        self._channels = channels or Channels(sock, buffer, self._leader)

    def recall(self) -> None:
        """Load what routing remembers (the runaway windows) before the first commit."""
        with self._conn.transaction(durable=False) as conn:
            self._routing.recall(conn, now_us())
            if self._retry_keys is not None:
                self._retry_keys.recall(conn, now_us())

    def run(self) -> None:
        """Tell the parent the writer is ready, then commit until the parent's end closes."""
        self._sock.sendall(framing.encode({"ready": True}))
        while self._open or self._waiting:
            self._receive()
            if self._waiting:
                self._commit()
            if self._unrouted and self._may_route_committed():
                self._route_committed()
            if self._handed and self._answers_first(time.monotonic() - self._handed_since):
                self._record_handed()
            if self._route_due and self._may_route():
                self._route_due = self._route() == ROUTE_BATCH
                self._last_route = time.monotonic()
            if time.monotonic() >= self._next_supervision:
                self._supervise()
            if self._checkpoint_due:
                self._checkpoint()
        if self._unrouted:
            self._route_committed()
        for _ in range(ROUTE_ON_EXIT_BATCHES if self._backlog else 0):
            if self._route() < ROUTE_BATCH:
                break
        self._conn.close()

    def _may_route_committed(self) -> bool:
        """The signals committed last are routed once they have waited ROUTE_MIN_DELAY and no
        new signal waits to be committed, so a commit's answers never wait for the routing of
        the one before; under a steady stream, when ROUTE_MAX_DELAY has passed or ROUTE_BATCH
        are waiting. Either way in one transaction whose fixed costs are paid for all of
        them."""
        return len(self._unrouted) >= ROUTE_BATCH or self._answers_first(
            time.monotonic() - self._unrouted_since, ROUTE_MIN_DELAY
        )

    def _may_route(self) -> bool:
        """Catching up from the database: under load at most every ROUTE_MIN_INTERVAL, so that
        each routing transaction takes a larger batch."""
        return self._answers_first(time.monotonic() - self._last_route, ROUTE_MIN_INTERVAL)

    def _answers_first(self, waited: float, at_least: float = 0.0) -> bool:
        """Route when no signal waits to be committed (and ``at_least`` seconds have passed),
        or when routing has waited ROUTE_MAX_DELAY, so alarms keep flowing under a steady
        stream of signals."""
        if waited >= ROUTE_MAX_DELAY:
            return True
        return not self._signals_wait() and waited >= at_least

    def _signals_wait(self) -> bool:
        """Whether signals wait to be committed, having read what has arrived."""
        self._receive(0.0)
        return bool(self._waiting)

    def _receive(self, timeout: float | None = None) -> None:
        if not self._open:
            return
        if timeout is None:
            now = time.monotonic()
            if self._waiting:
                timeout = 0.0
            elif self._route_due:
                timeout = max(0.0, self._last_route + ROUTE_MIN_INTERVAL - now)
            else:
                timeout = max(0.0, self._next_supervision - now)
            if self._unrouted:
                timeout = min(timeout, max(0.0, self._unrouted_since + ROUTE_MIN_DELAY - now))
            if self._handed:
                timeout = 0.0
        self._open, messages = self._channels.read(timeout)
        for channel, message in messages:
            if not isinstance(message, dict):  # signals
                self._channels.arrived(channel, len(message))
                self._waiting.append(message)
            elif message.get(framing.CHECKPOINT):
                self._checkpoint_due = True
            elif framing.RECORD in message:
                self._hand(channel, message)
            else:  # the node took or lost the lead of supervision
                channel.leader = bool(message.get("leader"))
        self._leader = self._channels.leader

    def _commit(self) -> None:
        frames, rows = 0, 0
        waiting = self._waiting
        while frames < len(waiting) and (
            frames == 0 or rows + len(waiting[frames]) <= self._max_batch
        ):
            rows += len(waiting[frames])
            frames += 1
        batch = [from_wire(row) for frame in waiting[:frames] for row in frame]
        del waiting[:frames]
        started = time.perf_counter()
        outcome: list[Stored | str]
        away = False  # the database could not commit at all (unreachable, its disk full)
        try:
            # frames without signals are a worker's probe (SignalWriter.probe): answered in
            # their turn, after the commit before them, without a transaction of their own
            outcome = list(self._store_batch(batch)) if batch else []
        except Exception as exc:
            log.error("group commit failed", extra={"signals": len(batch), "error": repr(exc)})
            away = unavailable(exc)
            if len(batch) > 1 and not away:
                outcome, away = self._one_by_one(batch)
            else:
                outcome = [repr(exc)] * len(batch)
        reply = {
            "frames": frames,
            "unavailable": away,
            "stored": [
                x if isinstance(x, str) else [x.incident_number, x.duplicate, x.conflict]
                for x in outcome
            ],
            "seconds": time.perf_counter() - started,
        }
        if not self._channels.answer(reply):  # each channel its frames' answers
            self._open = False  # the parent is gone; what is committed stays committed
        stored = [
            (sig, x)
            for sig, x in zip(batch, outcome, strict=True)
            if isinstance(x, Stored) and not x.conflict
        ]
        if stored:
            self._committed(stored)

    def _store_batch(self, batch: Sequence[Signal]) -> list[Stored]:
        """Store ``batch`` in one transaction, committed with an fsync; the retry keys it
        remembered reach the memory once that commit is durable."""
        staged = None
        with self._conn.transaction() as conn:
            if any(sig.idempotency_key is not None for sig in batch):
                staged = None if self._retry_keys is None else self._retry_keys.staged()
                stored = commit_signals(
                    conn, self._statement, batch, self._window_us, self._key_windows_us, staged
                )
            else:
                stored = store_plain(conn, self._statement, batch)
        if staged is not None:
            staged.apply()
        return stored

    def _one_by_one(self, batch: Sequence[Signal]) -> tuple[list[Stored | str], bool]:
        """A group commit the database refused, stored again one signal a transaction, so that
        a signal the database refuses fails alone and its neighbours are stored. When the
        database itself is away (unreachable, disk full), the rest fail at once (and True)."""
        outcome: list[Stored | str] = []
        for done, sig in enumerate(batch):
            try:
                outcome += self._store_batch([sig])
            except Exception as exc:
                if unavailable(exc):
                    return outcome + [repr(exc)] * (len(batch) - done), True
                log.error(
                    "signal refused by the database",
                    extra={"source": sig.source, "token": sig.token_name, "error": repr(exc)},
                )
                outcome.append(repr(exc))
        return outcome, False

    def _committed(self, stored: Sequence[tuple[Signal, Stored]]) -> None:
        """Signals committed and answered: routed next, in a transaction of their own that
        does not wait for the disk (it is derived from what is durable), so the node answers
        while the writer routes instead of waiting for it.

        On SQLite this writer is the only router, so they are routed from memory. On a
        shared database another node may route them first (its catch-up sees them once
        committed), so what is unrouted is read back under the counter lock instead, at once.
        When older signals wait unrouted (a failed routing), they wait with them for the
        catch-up, which routes them all in order from the database."""
        if self._routing.shared:
            self._route()
            return
        if self._backlog:
            self._route_due = True
            return
        fresh = [StoredSignal.of(x.incident_number, sig) for sig, x in stored if not x.duplicate]
        if fresh and not self._unrouted:
            self._unrouted_since = time.monotonic()
        self._unrouted += fresh

    def _route_committed(self) -> None:
        """Route the signals committed and answered since the last routing, from memory (held
        in the order they were committed: incident-number order), ROUTE_SLICE at a time in one
        transaction. When signals arrive to be committed meanwhile, the transaction ends after
        the slice in progress and the rest waits, overdue, until they are committed: a commit
        never waits for more than a slice's routing (a routing of hundreds of signals held
        every answer for tens of milliseconds)."""
        try:
            with self._conn.transaction(durable=False) as conn:
                while self._unrouted:
                    signals = self._unrouted[:ROUTE_SLICE]
                    self._routing.route_signals(conn, signals, now_us())
                    del self._unrouted[:ROUTE_SLICE]
                    if self._unrouted and self._signals_wait():
                        self._unrouted_since = time.monotonic() - ROUTE_MAX_DELAY
                        break
        except Exception as exc:
            self._unrouted = []  # routed from the database, in order, by the catch-up
            # the runaway windows counted signals whose routing was rolled back
            self._routing_failed = self._backlog = self._route_due = True
            self._routing.frames_queued = 0  # rolled back too
            log.error("routing failed; will retry", extra={"error": repr(exc)})
        else:
            self._tell_queued()

    def _route(self) -> int:
        """Route what is unrouted in the database, oldest first (also any signals held in
        memory for routing: they are unrouted there too)."""
        self._unrouted = []
        try:
            with self._conn.transaction(durable=False) as conn:
                now = now_us()
                if self._routing_failed:
                    self._routing.recover(conn, now)  # forget what the failed attempt counted
                routed = self._routing.route(conn, now)
            self._routing_failed = False
            self._backlog = routed == ROUTE_BATCH
            self._tell_queued()
            return routed
        except Exception as exc:
            self._routing_failed = True
            self._routing.frames_queued = 0  # rolled back
            log.error("routing failed; will retry", extra={"error": repr(exc)})
            return 0

    def _tell_queued(self) -> None:
        """After a routing transaction committed frames for the automation outputs: the node
        told at once (``framing.QUEUED_NOTICE``), so that its idle senders read them now."""
        if self._routing.frames_queued:
            self._routing.frames_queued = 0
            if not self._channels.tell(framing.QUEUED_NOTICE):
                self._open = False  # the parent is gone, as when an answer cannot be sent

    def _hand(self, channel: Channel, message: dict[str, Any]) -> None:
        """The delivery process handed over how deliveries ended (``framing.RECORD``): recorded
        between commits (:meth:`_record_handed`); a request not understood is answered so."""
        try:
            handed = Handed(channel, message)
        except (KeyError, TypeError, ValueError) as exc:
            log.error("recording request not understood", extra={"error": repr(exc)})
            refused = recording.answer(message.get("id"), error=repr(exc))
            self._channels.reply(channel, framing.encode(refused))
            return
        if not self._handed:
            self._handed_since = time.monotonic()
        self._handed.append(handed)

    def _record_handed(self) -> None:
        """Record the oldest request handed over (``store.recording``) step by step, in one
        transaction that does not wait for the disk (a delivery sent again is the worst a lost
        one does) and ends once a signal waits to be committed; answer what it recorded."""
        request = self._handed[0]
        try:
            with self._conn.transaction(durable=False) as conn:
                now = now_us()
                request.step(conn, now)
                while not request.done and not self._signals_wait():
                    request.step(conn, now)
        except Exception as exc:
            log.error("recording deliveries failed", extra={"error": repr(exc)})
            answer = request.answer(repr(exc))
        else:
            answer = request.answer()
        if answer["done"]:
            self._handed.popleft()
        self._handed_since = time.monotonic()
        self._channels.reply(request.origin, framing.encode(answer))

    def _supervise(self) -> None:
        self._next_supervision = time.monotonic() + SUPERVISE_SECONDS
        if self._routing_failed or self._routing.shared:
            # retry once a second, also when no new signal arrives; on a shared database also
            # route what a node that died left unrouted
            self._route_due = True
        try:
            with self._conn.transaction(durable=False) as conn:
                self._supervision.supervise(conn, now_us(), leader=self._leader)
        except Exception as exc:
            self._routing.cache.memory.forget_test_alarms()  # as it was before the failure
            log.error("supervision failed; will retry", extra={"error": repr(exc)})
        self._forget_keys()

    def _checkpoint(self) -> None:
        """Complete the node's checkpoint of the SQLite log between two of this writer's
        transactions, so that the next commit starts the log again (``sqlite.checkpoint``)."""
        self._checkpoint_due = False
        try:
            sqlite.checkpoint(self._conn.engine)
        except Exception as exc:
            log.warning("checkpoint failed", extra={"error": repr(exc)})

    def _forget_keys(self) -> None:
        """Forget the keys whose window has passed (the DC-09 retry window, or
        ``idempotency_hours`` for the tokens' keys): they can no longer match; and the events
        of the outbox older than ``events.KEEP_DAYS``."""
        try:
            with self._conn.transaction(durable=False) as conn:
                now = now_us()
                forget_keys(conn, now, self._window_us, self._key_windows_us)
                if self._retry_keys is not None:
                    self._retry_keys.expire(now)
                events.forget(conn, now)
        except Exception as exc:
            log.warning("forgetting old keys failed", extra={"error": repr(exc)})


def _channels(sock: socket.socket, buffer: bytearray, config: dict[str, Any]) -> Channels:
    leader, parent_reads = config.get("leader", True), config.get("parent_reads", True)
    return Channels(sock, buffer, bool(leader), bool(parent_reads))


def _listen(channels: Channels, config: dict[str, Any]) -> None:
    """Once the writer is ready: the node's other processes connect at ``listen``, if given."""
    if config.get("listen"):
        channels.listen(config["listen"])


class WriterThread:
    """The writer loop in a thread of the node's own process, on its end of the socket pair;
    watched as a process is (``pid``, ``poll``, ``wait``): exit code 0, or 1 when it failed."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._code = 1  # until the loop has ended well
        self._thread = threading.Thread(target=self._run, name="writer", daemon=True)

    @classmethod
    def start(cls, sock: socket.socket) -> WriterThread:
        writer = cls(sock)
        writer._thread.start()
        return writer

    @property
    def pid(self) -> int:
        return os.getpid()

    def poll(self) -> int | None:
        return None if self._thread.is_alive() else self._code

    def wait(self) -> int:
        self._thread.join()
        return self._code

    def kill(self) -> None:
        """A thread cannot be ended from outside: it is left to end with the process."""

    def _run(self) -> None:
        try:
            buffer = bytearray()
            config = _configuration(self._sock, buffer)
            if config is not None:
                channels = _channels(self._sock, buffer, config)
                loop = WriterLoop(self._sock, config, buffer, channels=channels)
                loop.recall()
                _listen(channels, config)
                try:
                    loop.run()
                finally:
                    channels.close()
            self._code = 0
        except Exception:
            log.exception("writer thread failed")
        finally:
            self._sock.close()


def main() -> None:
    files.restrict_umask()  # as its parent, whoever started it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        buffer = bytearray()
        config = _configuration(sock, buffer)
        if config is None:
            return
        logs.configure(config["log_level"], config["log_format"])
        channels = _channels(sock, buffer, config)
        loop = WriterLoop(sock, config, buffer, channels=channels)
        loop.recall()
        _listen(channels, config)
        quiet_garbage_collector()
        Watchdog.over(loop._conn, config["url"], float(config["stuck_seconds"])).start()
        try:
            loop.run()
        finally:
            channels.close()
    except Exception:
        log.exception("writer process failed")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
