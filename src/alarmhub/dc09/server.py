"""The DC-09 listeners: TCP and UDP on each ``--dc09-listen`` address, asyncio protocols on the
node's event loop. Thin: frames are cut and judged by the pure modules; each event is submitted
to the writer, and the ACK goes out only after the commit that holds it.

TCP carries any number of frames per connection, split across reads as they come; answers go
back in the order the frames came. A connection is closed when it sends what cannot be DC-09,
leaves a frame unfinished for FRAME_SECONDS, or sends no complete frame for
``dc09_idle_seconds`` (separators alone do not count); connections over ``dc09_max_connections``,
or over ``dc09_max_connections_per_address`` from one address, are closed at once. Reading
pauses while the peer does not read its answers (the transport's write buffer is full) or while
IN_FLIGHT_MAX answers wait for their commits. No connection's trouble reaches another.

UDP: one message per datagram. Only a datagram's first frame is judged and answered; anything
after it is ignored (logged), so no datagram gets more than one answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import resource
import socket
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar, cast

from sqlalchemy import Connection

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.signal import Signal
from alarmhub.dc09 import frame, receiver
from alarmhub.dc09.accounts import AccountBook
from alarmhub.dc09.answer import nak
from alarmhub.dc09.frame import RawFrame
from alarmhub.dc09.receiver import Decision, Reply
from alarmhub.store.commit import Stored

log = logging.getLogger("alarmhub.dc09")
T = TypeVar("T")
FRAME_SECONDS = 10.0
SWEEP_SECONDS = 1.0
STOP_SECONDS = 30.0
IN_FLIGHT_MAX = 64  # answers one connection may have waiting before its reading pauses
_ANSWERS = {v: metrics.Tally(metrics.DC09_FRAMES.labels(v.value)) for v in Reply}
_ACKED = _ANSWERS[Reply.ACK]
ACCEPTED = metrics.Tally(metrics.SIGNALS_ACCEPTED.labels("dc09"))
DEDUPLICATED = metrics.Tally(metrics.SIGNALS_DEDUPLICATED.labels("dc09"))


def _refused(error: str) -> bytes:
    """The answer to a frame whose events could not be stored (the database down, the writer
    restarting, a commit not completed within ``store_commit_timeout``): NAK with the receiver's
    time, as decisions §14 says; the panel sends the frame again."""
    _ANSWERS[Reply.NAK].inc()
    log.error("dc09 event not stored; answered NAK", extra={"error": error})
    return nak(datetime.now(UTC))


def _shown(raw: RawFrame) -> str:
    return raw.body[:120].decode("ascii", "backslashreplace")


class Writer(Protocol):
    """The node's writer: stores signals durably and runs other writes off the event loop."""

    def enqueue(self, sig: Signal, /) -> asyncio.Future[Stored]: ...

    async def run(self, work: Callable[[Connection], T], /) -> T: ...


class Receiver:
    """Every DC-09 listener of a node and what they share: the accounts and the writer.
    ``max_connections``, ``max_per_address`` and ``idle_seconds`` are the connection limits
    of the module's docstring."""

    def __init__(
        self,
        accounts: AccountBook,
        writer: Writer,
        sockets: Sequence[Sockets],
        *,
        max_connections: int,
        max_per_address: int,
        idle_seconds: float,
    ) -> None:
        self._writer = writer
        self._sockets = list(sockets)
        self.stopping = False
        self.max_connections = max_connections
        self.max_per_address = max_per_address
        self.per_address: dict[str, int] = {}
        self._idle_seconds = float(idle_seconds)
        self._stall_seconds = min(FRAME_SECONDS, self._idle_seconds)
        self.accounts = accounts
        self.connections: set[_Connection] = set()
        self._servers: list[asyncio.Server] = []
        self._datagrams: list[asyncio.DatagramTransport] = []
        self._in_flight: set[asyncio.Future[bytes | None]] = set()
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        _raise_open_files_limit()
        await self._writer.run(self.accounts.recall)
        await self.accounts.start()
        loop = asyncio.get_running_loop()
        for tcp, udp in self._sockets:
            server = await loop.create_server(lambda: _Connection(self), sock=tcp, backlog=4096)
            self._servers.append(server)
            transport, _ = await loop.create_datagram_endpoint(lambda: _Datagrams(self), sock=udp)
            self._datagrams.append(transport)
            host, port = tcp.getsockname()[:2]
            log.info("dc09 listening", extra={"host": host, "port": port, "protocols": "tcp,udp"})
        self._sweeper = asyncio.create_task(self._sweep(), name="dc09-sweep")

    async def stop(self) -> None:
        """Stop taking frames, answer those in flight (their commits finish), close."""
        self.stopping = True
        for server in self._servers:
            server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=STOP_SECONDS)
        for transport in self._datagrams:
            transport.close()
        for connection in list(self.connections):
            connection.close()
        await self.accounts.stop()

    # judging and storing ------------------------------------------------------------------

    def judge(self, raw: RawFrame, peer: str) -> Decision:
        decision = receiver.decide(raw, self.accounts.key_of)
        if decision.reply is not Reply.ACK:
            _ANSWERS[decision.reply].inc()
            level = logging.INFO if decision.reply is Reply.IGNORED else logging.WARNING
            log.log(
                level,
                f"dc09 frame answered {decision.reply.value}",
                extra={"peer": peer, "reason": decision.reason, "frame": _shown(raw)},
            )
        elif decision.unknown_codes:
            log.warning(
                "dc09 SIA codes not in the table were left out",
                extra={"peer": peer, "codes": ",".join(decision.unknown_codes)},
            )
        return decision

    def accept(self, decision: Decision, peer: str) -> bytes | asyncio.Future[bytes | None]:
        """The ACK of an accepted frame: at once for a link test; for events, a future that
        resolves to it once the commit holding them is durable (to a NAK when they could not be
        stored, decisions §14: the panel sends again). Callbacks, not a task per frame."""
        if not decision.events:
            return self._acknowledge(decision)
        msg = decision.message
        assert msg is not None
        dnis = self.accounts.dnis_of(msg.receiver_number, msg.line_number)
        signals = receiver.signals(decision, dnis, now_us())
        answer: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        try:
            stored = list(map(self._writer.enqueue, signals))
        except StoreUnavailable as exc:
            answer.set_result(_refused(repr(exc)))
            return answer
        committed = functools.partial(self._committed, decision, signals, stored, answer, peer)
        for future in stored:
            future.add_done_callback(committed)
        self._in_flight.add(answer)
        return answer

    def _committed(
        self,
        decision: Decision,
        signals: list[Signal],
        stored: list[asyncio.Future[Stored]],
        answer: asyncio.Future[bytes | None],
        peer: str,
        _: object,
    ) -> None:
        """Once every event of a frame is stored (or not): its ACK, or a NAK when one of them
        could not be stored (the panel sends the frame again)."""
        if answer.done():  # answered when an earlier event's callback found them all done
            return
        for future in stored:
            if not future.done():
                return
        self._in_flight.discard(answer)
        for future in stored:
            if future.cancelled() or future.exception() is not None:
                error = "cancelled" if future.cancelled() else repr(future.exception())
                answer.set_result(_refused(error))
                return
        debug = log.isEnabledFor(logging.DEBUG)
        for sig, future in zip(signals, stored, strict=True):
            result = future.result()
            # a retry key names the frame's content: a conflict is the same event stored
            # before under another line mapping, so it is a retransmission too
            (DEDUPLICATED if result.duplicate or result.conflict else ACCEPTED).inc()
            if debug:
                log.debug(
                    "dc09 event stored",
                    extra={
                        "incident_number": result.incident_number,
                        "duplicate": result.duplicate,
                        "dc09_account": decision.message.account if decision.message else "",
                        "code": sig.fields.code,
                        "peer": peer,
                    },
                )
        answer.set_result(self._acknowledge(decision))

    def _acknowledge(self, decision: Decision) -> bytes:
        """The account reported (supervision), and the ACK."""
        msg = decision.message
        assert msg is not None
        account = msg.account or decision.panel
        if account:
            self.accounts.reported(account, msg.receiver_number, msg.line_number)
        _ACKED.inc()
        return decision.ack()

    async def _sweep(self) -> None:
        """Close connections that stalled in a frame or stayed idle too long."""
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            now = time.monotonic()
            for connection in list(self.connections):
                if connection.partial:
                    late = now - connection.frame_started > self._stall_seconds
                else:
                    late = now - connection.last_active > self._idle_seconds
                if not connection.pending and late:
                    log.info(
                        "dc09 connection closed",
                        extra={"peer": connection.peer, "reason": "stalled or idle"},
                    )
                    connection.close()


class _Connection(asyncio.Protocol):
    """One TCP connection: frames in, answers out in the order the frames came."""

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self.pending: deque[asyncio.Future[bytes | None]] = deque()
        self.peer = ""
        self._host = ""
        self.last_active = time.monotonic()  # the last complete frame (or the connection)
        self.frame_started = self.last_active  # when the unfinished frame began
        self._closing = False
        self._writing_paused = False
        self._reading_paused = False

    @property
    def partial(self) -> bool:
        return bool(self._buffer)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        host = str(peer[0]) if isinstance(peer, tuple) else self.peer
        receiver = self._receiver
        connections = receiver.connections
        if len(connections) >= receiver.max_connections or receiver.stopping:
            log.warning("dc09 connection refused: too many", extra={"peer": self.peer})
            transport.abort()
            return
        if receiver.per_address.get(host, 0) >= receiver.max_per_address:
            log.warning(
                "dc09 connection refused: too many from its address", extra={"peer": self.peer}
            )
            transport.abort()
            return
        receiver.per_address[host] = receiver.per_address.get(host, 0) + 1
        self._host = host
        self._transport = transport
        connections.add(self)
        metrics.DC09_CONNECTIONS.set(len(connections))

    def data_received(self, data: bytes) -> None:
        if self._transport is None or self._receiver.stopping:
            return
        now = time.monotonic()
        if not self._buffer:
            self.frame_started = now
        self._buffer += data
        frames, junk = frame.split(self._buffer)
        if frames:
            self.last_active = self.frame_started = now
        for raw in frames:
            decision = self._receiver.judge(raw, self.peer)
            if decision.reply is Reply.ACK:
                acked = self._receiver.accept(decision, self.peer)
                if isinstance(acked, bytes):
                    self._queue_now(acked)
                else:
                    self._queue(acked)
            elif decision.answer is not None:
                self._queue_now(decision.answer)
        if junk is not None:
            log.info("dc09 connection closed", extra={"peer": self.peer, "reason": junk})
            self._buffer.clear()
            self.close()
        self._pace()

    # back-pressure: a peer that does not read its answers is not read either --------------

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._pace()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._pace()

    def _pace(self) -> None:
        """Pause reading while the answers back up (unread, or waiting for commits)."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        stop = self._writing_paused or len(self.pending) >= IN_FLIGHT_MAX
        if stop != self._reading_paused:
            self._reading_paused = stop
            if stop:
                transport.pause_reading()
            else:
                transport.resume_reading()

    def _queue_now(self, answer: bytes) -> None:
        if not self.pending and self._transport is not None:
            self._transport.write(answer)
            return
        future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        future.set_result(answer)
        self._queue(future)

    def _queue(self, future: asyncio.Future[bytes | None]) -> None:
        self.pending.append(future)
        future.add_done_callback(self._deliver)

    def _deliver(self, _: object) -> None:
        while self.pending and self.pending[0].done():
            future = self.pending.popleft()
            answer = None if future.cancelled() or future.exception() else future.result()
            if answer is not None and self._transport is not None:
                self._transport.write(answer)
        if not self.pending and self._closing:
            self._close_now()
        elif self._reading_paused:
            self._pace()

    def close(self) -> None:
        """Close once the answers of frames already in flight are written."""
        self._closing = True
        if not self.pending:
            self._close_now()

    def _close_now(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self._host:
            left = self._receiver.per_address.pop(self._host, 1) - 1
            if left > 0:
                self._receiver.per_address[self._host] = left
            self._host = ""
        self._receiver.connections.discard(self)
        metrics.DC09_CONNECTIONS.set(len(self._receiver.connections))


class _Datagrams(asyncio.DatagramProtocol):
    """UDP: one message per datagram, answered (at most once) to its sender."""

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver
        self._transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        if self._receiver.stopping:
            return
        peer = f"{addr[0]}:{addr[1]}"
        frames, _ = frame.split(bytearray(data))
        if len(frames) > 1:
            log.warning(
                "dc09 datagram holds more than one frame: only the first is answered",
                extra={"peer": peer, "frames": len(frames)},
            )
        for raw in frames[:1]:
            decision = self._receiver.judge(raw, peer)
            if decision.reply is Reply.ACK:
                acked = self._receiver.accept(decision, peer)
                if isinstance(acked, bytes):
                    self._send_now(acked, addr)
                else:
                    acked.add_done_callback(functools.partial(self._send, addr=addr))
            elif decision.answer is not None:
                self._send_now(decision.answer, addr)

    def _send(self, acked: asyncio.Future[bytes | None], addr: tuple[str | Any, int]) -> None:
        answer = acked.result()
        if answer is not None:
            self._send_now(answer, addr)

    def _send_now(self, answer: bytes, addr: tuple[str | Any, int]) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.sendto(answer, addr)


Sockets = tuple[socket.socket, socket.socket]


def bind(host: str, port: int) -> Sockets:
    """The TCP and UDP sockets of one ``--dc09-listen`` address, bound before anything starts,
    so that a port in use is one clear error and not a half-started node."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    tcp = socket.socket(family, socket.SOCK_STREAM)
    udp = socket.socket(family, socket.SOCK_DGRAM)
    try:
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind((host, port))
        udp.bind((host, port))
    except OSError as exc:
        tcp.close()
        udp.close()
        raise SystemExit(
            f"error: cannot listen for DC-09 on {host}:{port}: {exc.strerror}"
        ) from None
    tcp.listen(4096)
    tcp.setblocking(False)
    udp.setblocking(False)
    return tcp, udp


def _raise_open_files_limit() -> None:
    """Let the node hold as many connections as the system allows this process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
