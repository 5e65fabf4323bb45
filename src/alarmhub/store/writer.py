"""The node's side of the group-commit writer.

Requests hand their signal to :meth:`SignalWriter.submit` and wait. Every signal submitted in
one turn of the event loop goes to the writer process as one frame; that process commits all
waiting frames in one transaction and answers. Each request is answered only after the commit
that holds its row. While a commit runs, new signals queue for the next one, so batches grow with
load and the cost of an fsync is shared. If the writer process dies, waiting requests fail
(``STORE-1``, the caller retries) and a new one is started.

A commit that has not completed within ``store_commit_timeout`` (a PostgreSQL primary waiting for
a synchronous standby that is gone, a stalled disk) fails its requests with ``STORE-1`` at that
time (decisions §14); its frame stays in flight, and when the commit completes after all its
signals are kept (never rolled back). While such a commit is outstanding new signals are refused
at once, and :attr:`SignalWriter.committing` is False (``/healthz`` answers 503) until the writer
answers it. Other writes (:meth:`SignalWriter.run`) are bounded by the same time.

A commit the database refuses at once because it cannot commit at all (unreachable, its disk
full: ``unavailable`` in the writer's answer) fails its requests with ``STORE-1`` too, and makes
:attr:`SignalWriter.committing` False until a commit succeeds or ``store_commit_timeout`` passes
without another such failure (so that a node a load balancer has taken out of service, and sent
nothing since, is taken back and tries again).

How the writer is started is the one thing a node may choose (``start_writer``): by default
:func:`start_process`, a process of its own; ``WriterThread.start`` of
:mod:`alarmhub.store.writer_process` runs the same loop on the same socket and frames in a
thread of the node's own process instead (a node embedded in another program, such as tests
that call its app in-process).

A worker of a node that runs several (``serve --workers N``) starts no writer: it connects to the
node's one writer at ``address`` (a Unix socket the node's parent process has it listen on, and
starts again if it dies); when that channel closes, the worker fails its waiting requests as
above and connects again.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub import metrics
from alarmhub.core.dc09 import TOKEN_NAME as DC09_TOKEN_NAME
from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.signal import Signal
from alarmhub.node import spawner
from alarmhub.settings import Settings
from alarmhub.store import framing, operations, watchdog
from alarmhub.store.commit import Stored, to_wire

log = logging.getLogger("alarmhub.writer")
T = TypeVar("T")
RESTART_SECONDS = 1.0
CONNECT_RETRY_SECONDS = 0.1
START_TIMEOUT_SECONDS = 30.0

Waiters = list[asyncio.Future[Stored]]


class _Frame:
    """A frame sent to the writer, not answered yet: its requests, when it was sent, and the
    timer that fails them once it is overdue."""

    __slots__ = ("sent", "timer", "waiters")

    def __init__(self, waiters: Waiters, sent: float) -> None:
        self.waiters = waiters
        self.sent = sent
        self.timer: asyncio.TimerHandle | None = None


class WriterHandle(Protocol):
    """A started writer, as the node watches it: a process (``subprocess.Popen`` or a child the
    node's spawner forked) or a thread."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None:
        """The exit code once the writer has ended, else None."""

    def wait(self) -> int:
        """Wait for the writer to end; its exit code."""

    def kill(self) -> None:
        """End the writer now (a process: SIGKILL)."""


StartWriter = Callable[[socket.socket], WriterHandle]
"""Starts a writer on its end of the socket pair, which it takes over."""


def start_process(sock: socket.socket) -> spawner.ChildProcess:
    """The writer as a process of its own, ``python -m alarmhub.store.writer_process``, on
    ``sock`` (passed to it, then closed here); forked by the node's spawner when it has one."""
    try:
        return spawner.popen(
            "alarmhub.store.writer_process", [str(sock.fileno())], pass_fds=[sock.fileno()]
        )
    finally:
        sock.close()


def writer_config(settings: Settings, leader: bool, listen: str | None = None) -> dict[str, Any]:
    """The writer's configuration, its first frame (never on the command line, where other users
    of the machine could read a password); ``leader``: whether the node leads supervision;
    ``listen``: the Unix socket it listens on for the node's other processes (its workers, its
    delivery process)."""
    s = settings
    return {
        "listen": listen,
        "url": s.database,
        "max_batch": s.max_batch,
        "idempotency_hours": s.idempotency_hours,
        "key_windows": {DC09_TOKEN_NAME: s.dc09_retry_seconds},
        "runaway_limit": s.runaway_limit,
        "runaway_minutes": s.runaway_minutes,
        "test_grace_minutes": s.test_grace_minutes,
        "timezone": s.timezone,
        "log_level": s.log_level,
        "log_format": s.log_format,
        "leader": leader,
        "stuck_seconds": watchdog.stuck_seconds(s.store_commit_timeout),
    }


async def _connect(address: str) -> socket.socket:
    """A connection to the node's writer listening at ``address``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(sock, address)
    except BaseException:
        sock.close()
        raise
    return sock


class _Channel(asyncio.Protocol):
    """The socket to the writer process: frames out, answers in."""

    def __init__(self, writer: SignalWriter) -> None:
        self._writer = writer
        self._buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        for message in framing.decode_all(self._buffer):
            self._writer._answer(message)

    def connection_lost(self, exc: Exception | None) -> None:
        self._writer._lost(exc)


class SignalWriter:
    """Submits signals to the writer process and resolves each request after its commit."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        start_writer: StartWriter = start_process,
        *,
        address: str | None = None,
        listen: str | None = None,
    ) -> None:
        """``address``: the node's writer to connect to (a worker of a node of several), else
        one is started, listening at ``listen`` for the node's delivery process when given."""
        self._engine = engine
        self._settings = settings
        self._start_writer = start_writer
        self._address = address
        self._listen = listen
        self._outbox: list[tuple[list[Any], asyncio.Future[Stored]]] = []
        self._in_flight: deque[_Frame] = deque()
        self._commit_timeout = settings.store_commit_timeout
        # how long a stop waits for the writer's answers, then for its end (store.watchdog)
        self._stop_seconds = watchdog.stuck_seconds(settings.store_commit_timeout)
        self._running: dict[int, float] = {}  # other writes not finished: when each was asked
        self._refused_at: float | None = None  # the last commit the database could not make
        self._run_ids = 0
        self._transport: Any = None
        self._process: WriterHandle | None = None
        self._ready: asyncio.Future[None] | None = None
        self._flush_scheduled = False
        self._closing = False
        self._drained = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="writes")
        self._restart: asyncio.Task[None] | None = None
        # whether this node leads supervision (the writer runs the leader's checks): a node of
        # its own database always does; on a shared one, as Leadership tells (set_leader). A
        # worker says only what its Leadership tells (the parent tells the writer the rest).
        self._leader = engine.dialect.name == "sqlite" and address is None
        self.queued_listeners: list[Callable[[], None]] = []
        """Called when the writer's routing has committed frames for the automation outputs."""

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def available(self) -> bool:
        return self._transport is not None and not self._closing

    @property
    def committing(self) -> bool:
        """False while the node cannot commit: a signal's commit, or another write, has been
        outstanding longer than ``store_commit_timeout`` (decisions §14)."""
        return self._overdue() is None and not self._run_overdue() and not self._refusing()

    def _refusing(self) -> bool:
        """Whether a commit failed for want of the database within ``store_commit_timeout``
        and none succeeded since."""
        if self._refused_at is None:
            return False
        return asyncio.get_running_loop().time() - self._refused_at < self._commit_timeout

    def probe(self) -> None:
        """Send the writer a frame without signals when none of this process's is in flight:
        it is answered after whatever commit the writer is in, so a commit stuck for another
        worker's signals makes this worker's probe overdue too (:attr:`committing` False after
        ``store_commit_timeout``, and new signals refused at once)."""
        if self._transport is None or self._closing or self._in_flight or self._outbox:
            return
        self._in_flight.append(_Frame([], asyncio.get_running_loop().time()))
        self._transport.write(framing.encode([]))

    def _overdue(self) -> float | None:
        """How long the oldest frame in flight has waited, when longer than the timeout."""
        if not self._in_flight:
            return None
        waited = asyncio.get_running_loop().time() - self._in_flight[0].sent
        return waited if waited >= self._commit_timeout else None

    def _run_overdue(self) -> bool:
        if not self._running:
            return False
        oldest = min(list(self._running.values()), default=asyncio.get_running_loop().time())
        return asyncio.get_running_loop().time() - oldest >= self._commit_timeout

    async def start(self) -> None:
        if self._address is None:
            await self._spawn()
            return
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_SECONDS
        while True:  # the node's writer may be starting (again) just now
            try:
                await self._spawn()
                return
            except (OSError, StoreUnavailable):
                if asyncio.get_running_loop().time() > deadline:
                    raise StoreUnavailable("the node's writer is not reachable") from None
                await asyncio.sleep(CONNECT_RETRY_SECONDS)

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        first: dict[str, Any]
        if self._address is None:
            ours, theirs = socket.socketpair()
            self._process = self._start_writer(theirs)
            first = writer_config(self._settings, self._leader, self._listen)
        else:
            ours = await _connect(self._address)
            first = {"leader": self._leader}
        self._ready = loop.create_future()
        transport, _ = await loop.create_unix_connection(lambda: _Channel(self), sock=ours)
        log.debug("writer channel", extra={"transport": type(transport).__name__})
        transport.write(framing.encode(first))
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), START_TIMEOUT_SECONDS)
        except (TimeoutError, StoreUnavailable):
            transport.close()
            raise StoreUnavailable("the writer process did not start") from None
        self._transport = transport
        if self._leader != first["leader"]:  # the lead changed while the writer started
            self.set_leader(self._leader)
        if self._process is not None:
            log.info("writer process started", extra={"pid": self._process.pid})
        else:
            log.info("writer connected", extra={"address": self._address})

    def set_leader(self, held: bool) -> None:
        """This node took or lost the lead of supervision: the writer runs the leader's checks
        (open/close schedules) only while it holds it; a writer started later is told at start."""
        self._leader = held
        if self._transport is not None:
            self._transport.write(framing.encode({"leader": held}))

    async def complete_checkpoint(self) -> None:
        """Ask the writer to complete the node's checkpoint of the SQLite log
        (``sqlite.checkpoint``), between two of its transactions."""
        if self._transport is not None:
            self._transport.write(framing.CHECKPOINT_REQUEST)

    async def stop(self) -> None:
        """Refuse new signals, let every submitted one be committed and answered, then stop:
        each wait bounded by ``watchdog.stuck_seconds`` (the writer killed after it)."""
        self._closing = True
        if self._restart is not None:
            self._restart.cancel()
        self._flush()
        if self._in_flight:
            self._drained.clear()
            try:
                await asyncio.wait_for(self._drained.wait(), self._stop_seconds)
            except TimeoutError:
                log.error("writer did not answer; stopping", extra={"frames": len(self._in_flight)})
        if self._transport is not None:
            self._transport.close()
        if self._process is not None:
            await self._ended(self._process)
        self._executor.shutdown(wait=True)

    async def _ended(self, process: WriterHandle) -> None:
        """Wait until the writer has ended; kill it when it has not within the stop's time."""
        try:
            await asyncio.wait_for(asyncio.to_thread(process.wait), self._stop_seconds)
        except TimeoutError:
            log.error("writer did not stop; killed", extra={"pid": process.pid})
            process.kill()

    async def submit(self, sig: Signal) -> Stored:
        """Queue a signal and wait until the commit holding it is durable."""
        return await self.enqueue(sig)

    def enqueue(self, sig: Signal) -> asyncio.Future[Stored]:
        """Queue a signal; the future resolves once the commit holding it is durable (for
        callers that answer from a callback, without a task of their own: the DC-09 receiver)."""
        if self._transport is None or self._closing:
            raise StoreUnavailable("shutting down" if self._closing else "writer not running")
        if (waited := self._overdue()) is not None:  # its answer ends the wait
            raise StoreUnavailable(f"a commit outstanding for {waited:.0f} s")
        future: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        self._outbox.append((to_wire(sig), future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        return future

    def _flush(self) -> None:
        """Send everything submitted in this turn of the loop as one frame."""
        self._flush_scheduled = False
        if not self._outbox or self._transport is None:
            return
        outbox, self._outbox = self._outbox, []
        loop = asyncio.get_running_loop()
        frame = _Frame([future for _, future in outbox], loop.time())
        frame.timer = loop.call_later(self._commit_timeout, self._expire, frame)
        self._in_flight.append(frame)
        self._transport.write(framing.encode([row for row, _ in outbox]))

    def _expire(self, frame: _Frame) -> None:
        """``frame``'s commit is overdue: its requests are answered STORE-1 now; the frame
        stays in flight (what the writer commits later is kept)."""
        frame.timer = None
        overdue = [future for future in frame.waiters if not future.done()]
        if not overdue:
            return
        error = StoreUnavailable(f"commit not completed within {self._commit_timeout:g} s")
        for future in overdue:
            future.set_exception(error)
        metrics.COMMIT_FAILURES.inc()
        log.error(
            "commit overdue; signals answered STORE-1",
            extra={"signals": len(overdue), "seconds": self._commit_timeout},
        )

    def _answer(self, message: dict[str, Any]) -> None:
        if framing.QUEUED in message:
            for listener in self.queued_listeners:
                listener()
            return
        if "ready" in message:
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(None)
            return
        frames = [self._in_flight.popleft() for _ in range(message["frames"])]
        waiters = [f for frame in frames for f in frame.waiters]
        if message.get("unavailable"):
            self._refused_at = asyncio.get_running_loop().time()
        elif any(not _failed(outcome) for outcome in message["stored"]):
            self._refused_at = None
        late = False
        for frame in frames:
            if frame.timer is not None:
                frame.timer.cancel()
            elif frame.waiters:  # a probe has no timer and no requests
                late = True
        if late:
            log.warning(
                "overdue commit completed",
                extra={
                    "seconds": message["seconds"],
                    "failed": any(map(_failed, message["stored"])),
                },
            )
        if not waiters:  # probes alone
            if not self._in_flight:
                self._drained.set()
            return
        metrics.COMMIT_SECONDS.observe(message["seconds"])
        metrics.COMMIT_BATCH.observe(len(waiters))
        failed = False
        for future, outcome in zip(waiters, message["stored"], strict=True):
            if isinstance(outcome, str):  # the database refused this signal (or the commit)
                failed = True
                if not future.done():
                    future.set_exception(StoreUnavailable(outcome))
            elif not future.done():
                future.set_result(Stored(*outcome))
        if failed:
            metrics.COMMIT_FAILURES.inc()
        if not self._in_flight:
            self._drained.set()

    def _lost(self, exc: Exception | None) -> None:
        """The writer process is gone: fail whatever it had not answered, start another."""
        self._transport = None
        for frame in self._in_flight:
            if frame.timer is not None:
                frame.timer.cancel()
        waiters = [f for frame in self._in_flight for f in frame.waiters]
        waiters += [f for _, f in self._outbox]
        self._in_flight.clear()
        self._outbox.clear()
        self._drained.set()
        error = StoreUnavailable("writer process ended")
        for future in waiters:
            if not future.done():
                future.set_exception(error)
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(error)
        if self._closing:
            return
        if self._address is not None:  # the node's parent starts it again
            log.warning(
                "writer channel closed; connecting again",
                extra={"unanswered": len(waiters), "error": repr(exc)},
            )
        else:
            code = self._process.poll() if self._process else None
            log.error(
                "writer process ended; restarting",
                extra={"exit_code": code, "unanswered": len(waiters), "error": repr(exc)},
            )
        self._restart = asyncio.get_running_loop().create_task(self._respawn())

    async def _respawn(self) -> None:
        while not self._closing:
            await asyncio.sleep(RESTART_SECONDS)
            if self._process is not None:
                await asyncio.to_thread(self._process.wait)
            try:
                await self._spawn()
                return
            except (OSError, StoreUnavailable) as exc:
                if self._address is not None:  # the node's parent is starting it again
                    log.info("writer not reachable yet", extra={"error": repr(exc)})
                else:
                    log.error("writer process restart failed", extra={"error": repr(exc)})

    async def run(self, work: Callable[[Connection], T], *, bounded: bool = True) -> T:
        """Run another write (heartbeats, supervision) in its own transaction, off the loop.
        ``bounded``: StoreUnavailable when it has not completed within ``store_commit_timeout``
        (it may still commit later; one not started by then never runs); unbounded for the
        reads a node makes once at its start."""
        loop = asyncio.get_running_loop()
        self._run_ids += 1
        key = self._run_ids
        self._running[key] = loop.time()
        submitted = self._executor.submit(self._transaction, work)
        # done or cancelled before it started (then it never runs): no longer outstanding
        submitted.add_done_callback(lambda _: self._running.pop(key, None))
        done = asyncio.wrap_future(submitted)
        if not bounded:
            return await done
        try:
            return await asyncio.wait_for(done, self._commit_timeout)
        except TimeoutError:
            log.error("write not completed in time", extra={"seconds": self._commit_timeout})
            raise StoreUnavailable(
                f"write not completed within {self._commit_timeout:g} s"
            ) from None

    def _transaction(self, work: Callable[[Connection], T]) -> T:
        return operations.run(self._engine, work)

    @property
    def engine(self) -> Engine:
        """The node's database (for reads beside the writer)."""
        return self._engine


def _failed(outcome: Any) -> bool:
    return isinstance(outcome, str)


__all__ = [
    "SignalWriter",
    "StartWriter",
    "Stored",
    "WriterHandle",
    "start_process",
    "writer_config",
]
