"""One connection of a receiver link over any asyncio transport (TCP socket, serial port):
frames cut by the protocol's bounded splitter, read, stored and answered in the order they came,
ACK only after the commit that holds them."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, cast

from sqlalchemy import Connection

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core import receiver_links
from alarmhub.core.alarm_types import RECEIVER_DATA, RECEIVER_EVENT
from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.dc09.receiver import UNMAPPED_DNIS
from alarmhub.dc09.server import Writer
from alarmhub.receivers.frames import Frame, Kind, Options, escaped, unreadable
from alarmhub.receivers.protocols import ReceiverProtocol
from alarmhub.store.commit import Stored

log = logging.getLogger("alarmhub.receivers")
IN_FLIGHT_MAX = 16  # answers one connection may have waiting before its reading pauses
LAST_FRAME_MAX = 255  # receiver_link.last_frame
PANEL_MAX = 10
MINUTE_SECONDS = 60
STORE_SECONDS = 10.0  # a frame not stored within this is answered NAK (decisions section 14)
_KEPT = {Kind.RECEIVER_EVENT: RECEIVER_EVENT.type, Kind.UNREADABLE: RECEIVER_DATA.type}


class Keeper(Protocol):
    """Keeps a frame as received and raises its alarm (``store.receivers.FrameKeeper``)."""

    def keep(
        self,
        conn: Connection,
        link: str,
        kind: str,
        text: str,
        received_us: int,
        receiver: str = "",
        line: str = "",
    ) -> int: ...


@dataclass
class Traffic:
    """What a link's connections saw, for its reports: counts, the last frame and when."""

    frames: int = 0
    acks: int = 0
    naks: int = 0
    unreadable: int = 0
    last_seen_us: int | None = None
    last_frame: str | None = None
    seen_at: float = field(default_factory=time.monotonic)  # the last sign of life (monotonic)
    _seconds: deque[list[int]] = field(default_factory=deque)  # [second, frames] of the minute

    def seen(self, raw: bytes, at_us: int) -> None:
        self.frames += 1
        self.last_seen_us = at_us
        self.last_frame = escaped(raw)[:LAST_FRAME_MAX]
        self.seen_at = now = time.monotonic()
        second = int(now)
        if self._seconds and self._seconds[-1][0] == second:
            self._seconds[-1][1] += 1
        else:
            self._seconds.append([second, 1])
            self._forget(now)

    def per_minute(self) -> int:
        self._forget(time.monotonic())
        return sum(count for _, count in self._seconds)

    def _forget(self, now: float) -> None:
        while self._seconds and self._seconds[0][0] <= now - MINUTE_SECONDS:
            self._seconds.popleft()


@dataclass
class Link:
    """What a link's sessions share: its name, protocol and options, where frames go, how its
    lines map to a dnis, what it saw, and whom to tell of a sign of life."""

    name: str
    protocol: ReceiverProtocol
    options: Options
    writer: Writer
    keeper: Keeper
    dnis_of: Callable[[str, str], str | None]
    alive: Callable[[], None] = lambda: None
    traffic: Traffic = field(default_factory=Traffic)


def storable(frame: Frame) -> bool:
    """Whether an event frame's account and events fit a signal (else it is kept as RXDAT)."""
    if not (0 < len(frame.account) <= PANEL_MAX and frame.account.isascii()):
        return False
    if not frame.account.isalnum() or not frame.events:
        return False
    return all(
        len(code) == 4 and len(area) == 2 and len(zone) == 3 and (code + area + zone).isascii()
        for code, area, zone in frame.events
    )


def signals(link: Link, frame: Frame, received_us: int) -> list[Signal]:
    """The signals of an event frame: one per event, on its line's dnis (the unmapped dnis when
    its receiver and line map to none: the router raises UNKNOWN ACCOUNT)."""
    dnis = link.dnis_of(frame.receiver, frame.line) or UNMAPPED_DNIS
    source = receiver_links.source(link.name, frame.receiver, frame.line)
    return [
        Signal(
            source,
            receiver_links.DESTINATION,
            SignalFields(dnis, frame.account, code, area, zone),
            receiver_links.TOKEN_NAME,
            received_us,
        )
        for code, area, zone in frame.events
    ]


def _all_stored(stored: Iterable[asyncio.Future[Stored]]) -> asyncio.Future[bool]:
    """True once every signal is committed; False as soon as one could not be stored."""
    waiting = list(stored)
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[bool] = loop.create_future()
    left = [len(waiting)]

    def late() -> None:
        if not outcome.done():
            log.error("receiver event not stored in time", extra={"seconds": STORE_SECONDS})
            outcome.set_result(False)  # if it commits later, the resent frame is stored again

    timer = loop.call_later(STORE_SECONDS, late)
    outcome.add_done_callback(lambda _: timer.cancel())

    def done(future: asyncio.Future[Stored]) -> None:
        if outcome.done():
            return
        if future.cancelled() or future.exception() is not None:
            error = "cancelled" if future.cancelled() else repr(future.exception())
            log.error("receiver event not stored", extra={"error": error})
            outcome.set_result(False)
            return
        left[0] -= 1
        if not left[0]:
            outcome.set_result(True)

    for future in waiting:
        future.add_done_callback(done)
    return outcome


def _answered(ok: bool) -> asyncio.Future[bool]:
    future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    future.set_result(ok)
    return future


class Session(asyncio.Protocol):
    """One connection of ``link``: frames in, answers out in the order the frames came.

    An event frame becomes one signal per event through the writer (ACK once all are committed,
    NAK when any could not be stored or not within STORE_SECONDS); a receiver event or a frame
    that cannot be read is kept as received (RXEVT, RXDAT) and ACKed after that commit; a link
    test is ACKed at once. At most IN_FLIGHT_MAX frames wait for their answers; reading pauses
    while they do, while frames of the last read wait their turn, or while the peer does not
    read its answers."""

    def __init__(self, link: Link, peer: str = "") -> None:
        self.link = link
        self.peer = peer
        self._splitter = link.protocol.splitter()
        self._discarded = 0
        self._transport: asyncio.Transport | None = None
        self.pending: deque[tuple[Frame, asyncio.Future[bool]]] = deque()
        self._writing_paused = False
        self._reading_paused = False
        self._stopped = False
        self._backlog: deque[bytes] = deque()  # frames of the last read not taken yet
        self._keeping: set[asyncio.Task[bool]] = set()
        self.closed = asyncio.get_running_loop().create_future()

    @property
    def connected(self) -> bool:
        return self._transport is not None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        if not self.peer:
            peer = transport.get_extra_info("peername")
            self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer or "")
        log.info("receiver connection opened", extra={"link": self.link.name, "peer": self.peer})

    def data_received(self, data: bytes) -> None:
        if self._transport is None or self._stopped:
            return
        self._backlog.extend(self._splitter.feed(data))
        self._work()
        if self._splitter.discarded != self._discarded:
            log.warning(
                "receiver frame too long: kept cut off",
                extra={"link": self.link.name, "discarded": self._splitter.discarded},
            )
            self._discarded = self._splitter.discarded
        self._pace()

    def _work(self) -> None:
        """Take the frames read, up to IN_FLIGHT_MAX waiting for their answers; the rest of a
        read wait in the backlog (reading is paused meanwhile)."""
        while self._backlog and len(self.pending) < IN_FLIGHT_MAX:
            self._frame(self._backlog.popleft())

    def _frame(self, raw: bytes) -> None:
        link = self.link
        frame = link.protocol.read(raw, link.options)
        received = now_us()
        link.traffic.seen(raw, received)
        link.alive()
        if frame.kind is Kind.EVENT and not storable(frame):
            frame = unreadable(raw, "account or event does not fit", frame.receiver, frame.line)
        if frame.kind is Kind.LINK_TEST:
            answer = _answered(True)
        elif frame.kind is Kind.EVENT:
            try:
                stored = [link.writer.enqueue(sig) for sig in signals(link, frame, received)]
            except StoreUnavailable as exc:
                log.error("receiver event not stored", extra={"error": repr(exc)})
                answer = _answered(False)
            else:
                answer = _all_stored(stored)
        else:
            if frame.kind is Kind.UNREADABLE:
                link.traffic.unreadable += 1
                log.warning(
                    "receiver frame unreadable",
                    extra={"link": link.name, "reason": frame.reason, "frame": frame.text},
                )
            task = asyncio.create_task(self._keep(frame, received))
            self._keeping.add(task)
            task.add_done_callback(self._keeping.discard)
            answer = task
        self.pending.append((frame, answer))
        answer.add_done_callback(self._deliver)

    async def _keep(self, frame: Frame, received_us: int) -> bool:
        """Keep a receiver event or an unreadable frame as received; whether it was stored."""
        link = self.link
        work = functools.partial(
            link.keeper.keep,
            link=link.name,
            kind=_KEPT[frame.kind],
            text=frame.text,
            received_us=received_us,
            receiver=frame.receiver,
            line=frame.line,
        )
        try:
            await asyncio.wait_for(link.writer.run(work), STORE_SECONDS)
        except Exception as exc:
            log.error("receiver frame not kept", extra={"link": link.name, "error": repr(exc)})
            return False
        return True

    # answers, in order; back-pressure -------------------------------------------------------

    def _deliver(self, _: object) -> None:
        link = self.link
        while self.pending and self.pending[0][1].done():
            frame, future = self.pending.popleft()
            ok = not future.cancelled() and future.exception() is None and future.result()
            traffic = link.traffic
            if ok:
                traffic.acks += 1
                label = "unreadable" if frame.kind is Kind.UNREADABLE else "ack"
            else:
                traffic.naks += 1
                label = "nak"
                log.warning(
                    "receiver frame answered NAK",
                    extra={"link": link.name, "kind": frame.kind.value, "peer": self.peer},
                )
            metrics.RECEIVER_FRAMES.labels(link.name, label).inc()
            if self._transport is not None and not self._transport.is_closing():
                self._transport.write(link.protocol.answer(frame, bool(ok)))
        if self._backlog and not self._stopped:
            self._work()
        if self._reading_paused:
            self._pace()

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
        waiting = len(self.pending) >= IN_FLIGHT_MAX or bool(self._backlog)
        stop = self._stopped or self._writing_paused or waiting
        if stop != self._reading_paused:
            self._reading_paused = stop
            if stop:
                transport.pause_reading()
            else:
                transport.resume_reading()

    def pause(self) -> None:
        """Read no more (the link stops); the answers in flight still go out."""
        self._stopped = True
        self._pace()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    async def drain(self, timeout: float) -> None:
        """Wait (at most ``timeout``) until the answers of the frames in flight are sent."""
        waiting = [future for _, future in self.pending]
        if waiting:
            await asyncio.wait(waiting, timeout=timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        extra = {"link": self.link.name, "peer": self.peer, "error": repr(exc) if exc else ""}
        log.info("receiver connection closed", extra=extra)
        for raw in self._splitter.flush():  # a frame the connection cut: kept, not dropped
            frame = unreadable(raw, "the connection closed in the middle of the frame")
            self.link.traffic.unreadable += 1
            task = asyncio.create_task(self._keep(frame, now_us()))
            self._keeping.add(task)
            task.add_done_callback(self._keeping.discard)
        if not self.closed.done():
            self.closed.set_result(None)
