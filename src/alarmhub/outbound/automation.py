"""The automation output's sender (decisions section 12): one output's frames, read from its
durable queue in commit order, sent to the automation one at a time as a Sur-Gard receiver
sends them, each deleted from the queue once ACKed, before the next goes; the link test when
idle; ``alarmhub output test``'s one link test.

An idle sender reads its queue again at once when its node's routing has queued frames
(:meth:`OutputSender.wake`, from the writer's notice), and every QUEUE_POLL_SECONDS for those
another node's routing queued (a shared database)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core.outputs import (
    DOWN,
    FAILED,
    FAILURE_SECONDS,
    IDLE,
    TRIES_PER_ADDRESS,
    UP,
    OutputReport,
    OutputSettings,
    QueuedFrame,
)
from alarmhub.outbound.automation_lines import (
    ConnectLine,
    Line,
    LineDown,
    ListenLine,
    Peer,
    SerialLine,
)
from alarmhub.receivers.frames import ACK, NAK
from alarmhub.receivers.transports import RETRY_MAX_SECONDS, RETRY_MIN_SECONDS
from alarmhub.store.engine import commit_without_fsync, read_in_thread

BATCH = 256  # frames read from the queue at once
QUEUE_POLL_SECONDS = 0.5
"""An idle output reads its queue this often for frames another node queued (its own node's
routing wakes it at once)."""
OPEN_TICK_SECONDS = 1.0  # while it waits for a connection, whether it has something to send
NAK_PAUSE_SECONDS = 0.05  # before the frame goes again after a NAK (no loop at wire speed)
DEFAULT_BAUD = 9600
DEFAULT_FRAMING = "8N1"
LISTEN_TEST_SECONDS = 10.0  # `output test` of a listen output: the automation's time to connect

log = logging.getLogger("alarmhub.outputs")
T = TypeVar("T")


class OutputStore(Protocol):
    """The store's functions the sender uses (``alarmhub.store.outputs``, the module itself
    passed), each called in a thread with a connection in a transaction; all arguments
    positional, so the store's own parameter names are free."""

    def settings(self, conn: Connection, /) -> list[OutputSettings]: ...

    def head(
        self, conn: Connection, output_id: int, after_frame_id: int, limit: int, /
    ) -> list[QueuedFrame]: ...

    def delivered(self, conn: Connection, output_id: int, frame_id: int, /) -> None: ...

    def hold(self, conn: Connection, output_id: int, node: str, now_us: int, /) -> bool: ...

    def release(self, conn: Connection, node: str, /) -> None: ...

    def report(self, conn: Connection, output_id: int, report: OutputReport, /) -> None: ...

    def list_outputs(self, conn: Connection, now_us: int, /) -> list[dict[str, Any]]: ...


class Database(Protocol):
    """Where the store's functions run: ``read`` in a transaction of its own, ``commit`` in one
    whose commit does not wait for the disk; both in a thread."""

    async def read(self, work: Callable[[Connection], T]) -> T: ...

    async def commit(self, work: Callable[[Connection], T]) -> T: ...


class EngineDatabase:
    """:class:`Database` on an engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def read(self, work: Callable[[Connection], T]) -> T:
        return await read_in_thread(self.engine, work)

    async def commit(self, work: Callable[[Connection], T]) -> T:
        def run() -> T:
            with commit_without_fsync(self.engine) as conn:
                return work(conn)

        return await asyncio.to_thread(run)


def make_line(settings: OutputSettings) -> Line:
    """The line of an output's transport (ValueError when an address cannot be read)."""
    if settings.transport == "connect":
        return ConnectLine(settings.addresses)
    if settings.transport == "listen":
        return ListenLine(settings.addresses[0])
    if settings.transport == "serial":
        framing = settings.framing or DEFAULT_FRAMING
        return SerialLine(settings.addresses[0], settings.baud or DEFAULT_BAUD, framing)
    raise ValueError(f"no transport {settings.transport!r}")


class _NextAddress(Exception):
    """TRIES_PER_ADDRESS tries went unanswered: on at the next address, the frame kept."""


class OutputSender:
    """Sends one output's queue while :meth:`run` runs (its node holding the output's lane).

    One frame in flight: sent, then its ACK awaited for ``ack_timeout_seconds``; an ACK deletes
    it from the queue (``store.delivered``, committed without waiting for the disk) before the
    next is sent; a NAK or no answer sends it again, and after TRIES_PER_ADDRESS tries a connect
    output goes on at its next address with the frame. Idle for ``heartbeat_seconds`` (and on
    each new connection with nothing queued) it sends the link test, tried as a frame is, until
    a frame to send comes. ``failing_since_us`` is set by the first unanswered try, or by a
    connection that cannot be had while there is something to send; an ACK clears it."""

    def __init__(
        self,
        settings: OutputSettings,
        store: OutputStore,
        database: Database,
        node: str,
        *,
        line: Line | None = None,
        changed: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.name = settings.name
        self._store = store
        self._db = database
        self.node = node
        self.line = line if line is not None else make_line(settings)
        self._changed = changed
        self.queue: deque[QueuedFrame] = deque()
        self._after = 0  # the last frame id read from the queue
        self.sent = self.resent = self.acks = self.naks = self.timeouts = 0
        self.last_sent_us: int | None = None
        self.last_delivered_us: int | None = None
        self.failing_since_us: int | None = None
        self.peer: Peer | None = None
        self.problem = ""
        self._acked_here = False  # an ACK on the current connection
        self._tested_here = False  # something sent on the current connection
        self._last_send: float | None = None  # monotonic
        self._last_frame_id: int | None = None  # the frame last sent (sent again: resent)
        self._state = IDLE
        self._queued = asyncio.Event()  # set by wake: frames were queued

    # what it reports ---------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self.failing_since_us is not None:
            failing = now_us() - self.failing_since_us >= FAILURE_SECONDS * 1_000_000
            return FAILED if failing else DOWN
        if self.peer is None or not self.peer.connected:
            return DOWN
        return UP if self._acked_here else IDLE

    def report(self) -> OutputReport:
        return OutputReport(
            self.state,
            self.line.address,
            self.sent,
            self.resent,
            self.acks,
            self.naks,
            self.timeouts,
            self.last_sent_us,
            self.last_delivered_us,
            self.failing_since_us,
            self.node,
        )

    def _note(self) -> None:
        """Say when the state changed (reported at once)."""
        state = self.state
        if state != self._state:
            log.info(
                "automation output " + state,
                extra={"output": self.name, "address": self.line.address, "problem": self.problem},
            )
            self._state = state
            metrics.OUTPUT_UP.labels(self.name).set(1 if state == UP else 0)
            self._changed()

    def check(self) -> None:
        """Note a failure that has lasted FAILURE_SECONDS (called now and then)."""
        self._note()

    def _failing(self, problem: str) -> None:
        self.problem = problem
        if self.failing_since_us is None:
            self.failing_since_us = now_us()
        self._note()

    # the queue -----------------------------------------------------------------------------

    def wake(self) -> None:
        """Frames were queued (this node's routing committed some): an idle sender reads its
        queue now."""
        self._queued.set()

    async def _refill(self) -> None:
        if self.queue:
            return
        rows = await self._db.read(
            lambda conn: self._store.head(conn, self.settings.output_id, self._after, BATCH)
        )
        if rows:
            self.queue.extend(rows)
            self._after = rows[-1].frame_id

    def _test_due(self, connected: bool) -> bool:
        heartbeat = self.settings.heartbeat_seconds
        if heartbeat <= 0:
            return False
        if self._last_send is None or (connected and not self._tested_here):
            return True
        return time.monotonic() - self._last_send >= heartbeat

    async def _wants_to_send(self, connected: bool) -> bool:
        with contextlib.suppress(Exception):  # the database away: what was read stays
            await self._refill()
        return bool(self.queue) or self._test_due(connected)

    async def _delivered(self, frame_id: int) -> None:
        """Record the ACK of ``frame_id``, however long the database takes to come back."""
        delay = RETRY_MIN_SECONDS
        while True:
            try:
                await self._db.commit(
                    lambda conn: self._store.delivered(conn, self.settings.output_id, frame_id)
                )
                return
            except Exception as exc:
                log.warning(
                    "automation output ACK not recorded",
                    extra={"output": self.name, "frame_id": frame_id, "error": repr(exc)},
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)

    # the line ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Send until cancelled."""
        failed_opens = 0
        delay = RETRY_MIN_SECONDS
        logged: set[str] = set()  # why no connection could be had, each logged once until one
        self._note()
        while True:
            try:
                peer = await self._open()
            except (OSError, TimeoutError) as exc:
                problem = f"cannot connect to {self.line.address}: {str(exc) or 'time-out'}"
                if problem not in logged:
                    log.warning(problem, extra={"output": self.name})
                    logged.add(problem)
                self.problem = problem
                if await self._wants_to_send(connected=False):
                    self._failing(problem)
                self.line.next_address()
                failed_opens += 1
                if failed_opens >= len(self.line.addresses):
                    failed_opens = 0
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_SECONDS)
                continue
            failed_opens, delay = 0, RETRY_MIN_SECONDS
            logged.clear()
            self.peer, self._acked_here, self._tested_here = peer, False, False
            self.problem = ""
            log.info(
                "automation output connected",
                extra={"output": self.name, "address": self.line.address, "peer": peer.peer},
            )
            self._note()
            try:
                await self._converse(peer)
            except LineDown as exc:
                self._dropped(peer, f"connection to {self.line.address} lost: {exc}")
                if await self._wants_to_send(connected=False):
                    self._failing(self.problem)
                await asyncio.sleep(RETRY_MIN_SECONDS)
            except _NextAddress:
                tried = self.line.address
                self.line.next_address()
                self._dropped(peer, f"{TRIES_PER_ADDRESS} tries unanswered at {tried}")
                log.log(
                    logging.WARNING if tried != self.line.address else logging.DEBUG,
                    "automation output moves on",  # its only address: connects again
                    extra={"output": self.name, "from": tried, "to": self.line.address},
                )
            except Exception as exc:  # the database away: the connection is opened again
                log.warning(
                    "automation output stalled", extra={"output": self.name, "error": repr(exc)}
                )
                self._dropped(peer, f"stalled: {exc!r}")
                await asyncio.sleep(RETRY_MAX_SECONDS)

    def _dropped(self, peer: Peer, problem: str) -> None:
        peer.close()
        self.problem = problem
        self._acked_here = False
        self._note()

    async def _open(self) -> Peer:
        """A connection; while one is awaited (a listen output's automation), a failure once
        there is something to send."""
        opening = asyncio.ensure_future(self.line.open())
        try:
            while True:
                done, _ = await asyncio.wait((opening,), timeout=OPEN_TICK_SECONDS)
                if done:
                    return opening.result()
                if await self._wants_to_send(connected=False):
                    self._failing(f"no connection at {self.line.address}")
        except BaseException:  # stopped meanwhile (or the open failed: already retrieved)
            _abandon(opening)
            raise

    async def _converse(self, peer: Peer) -> None:
        while True:
            frame_id, frame = await self._next(peer)
            await self._exchange(peer, frame_id, frame)

    async def _next(self, peer: Peer) -> tuple[int | None, bytes]:
        """The first queued frame, or the link test when it is due (frame id None)."""
        while True:
            self._queued.clear()  # a wake from here on reads the queue again
            await self._refill()
            if self.queue:
                first = self.queue[0]
                return first.frame_id, first.frame
            if self._test_due(connected=True):
                return None, self.settings.link_test()
            await self._idle(peer)

    async def _idle(self, peer: Peer) -> None:
        """Wait for a wake, the poll for frames other nodes queued, or the link test's time;
        LineDown when the automation closes the connection meanwhile."""
        timeout = QUEUE_POLL_SECONDS
        heartbeat = self.settings.heartbeat_seconds
        if self._last_send is not None and heartbeat > 0:
            timeout = min(timeout, heartbeat - (time.monotonic() - self._last_send))
        woken = asyncio.ensure_future(self._queued.wait())
        try:
            await asyncio.wait((woken, peer.closed), timeout=max(0.0, timeout),
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        finally:
            woken.cancel()
        if peer.closed.done():
            raise LineDown("closed by the automation")

    async def _exchange(self, peer: Peer, frame_id: int | None, frame: bytes) -> None:
        """Send ``frame`` until an ACK; a link test gives way to a frame queued meanwhile."""
        tries = 0
        while True:
            peer.send(frame)
            tries += 1
            self._tested_here = True
            self._last_send = time.monotonic()
            if frame_id is not None:
                self.last_sent_us = now_us()
                if frame_id == self._last_frame_id:
                    self.resent += 1
                    metrics.OUTPUT_RESENT.labels(self.name).inc()
                else:
                    self.sent += 1
                    self._last_frame_id = frame_id
                    metrics.OUTPUT_SENT.labels(self.name).inc()
            answer = await peer.answer(self.settings.ack_timeout_seconds)
            if answer == ACK:
                self.acks += 1
                if frame_id is not None:
                    await self._delivered(frame_id)
                    self.queue.popleft()
                    self.last_delivered_us = now_us()
                self._acked_here = True
                self.failing_since_us = None
                self.problem = ""
                self._note()
                return
            if answer == NAK:
                self.naks += 1
                self._failing(f"NAK from {self.line.address}")
            else:
                self.timeouts += 1
                self._failing(f"no answer from {self.line.address}")
            if tries >= TRIES_PER_ADDRESS and self.line.moves:
                raise _NextAddress
            if answer == NAK:
                await asyncio.sleep(NAK_PAUSE_SECONDS)
            if frame_id is None:
                with contextlib.suppress(Exception):
                    await self._refill()
                if self.queue:
                    return

    async def stop(self) -> None:
        """Stop sending: the frame in flight, if any, is sent again by the next holder."""
        if self.peer is not None:
            self.peer.close()
        await self.line.close()


async def link_test(settings: OutputSettings) -> str:
    """``alarmhub output test``: one link test at the output's first address that can be
    reached (a listen output waits LISTEN_TEST_SECONDS for the automation to connect); its
    answer: ``ACK``, ``NAK``, ``no answer within N s``, or why no connection could be had."""
    try:
        line = make_line(settings)
    except ValueError as exc:
        return str(exc)
    problems = []
    try:
        for _ in line.addresses:
            try:
                if isinstance(line, ListenLine):
                    await line.listen()
                    async with asyncio.timeout(LISTEN_TEST_SECONDS):
                        peer = await line.open()
                else:
                    peer = await line.open()
            except (OSError, TimeoutError) as exc:
                if isinstance(exc, TimeoutError):
                    listening = isinstance(line, ListenLine)
                    why = f"no connection within {LISTEN_TEST_SECONDS:g} s" if listening else ""
                    why = why or "no connection: timed out"
                else:
                    why = exc.strerror or str(exc)
                problems.append(f"{line.address}: {why}")
                line.next_address()
                continue
            try:
                peer.send(settings.link_test())
                answer = await peer.answer(settings.ack_timeout_seconds)
            except LineDown as exc:
                return f"{line.address}: {exc}"
            finally:
                peer.close()
            if answer is None:
                return f"no answer within {settings.ack_timeout_seconds:g} s"
            return "ACK" if answer == ACK else "NAK"
        return "; ".join(problems)
    finally:
        await line.close()


def _abandon(opening: asyncio.Future[Peer]) -> None:
    """A connection being opened that nobody waits for any more: cancelled; one made all the
    same is closed, and a failure is retrieved (not logged later as never retrieved, with a
    traceback, when the sender stopped while the open was failing)."""
    if not opening.done():
        opening.cancel()
        opening.add_done_callback(_abandon)
    elif not opening.cancelled() and opening.exception() is None:
        opening.result().close()
