"""The receiver links a node runs: started, restarted and stopped as the station provisions
them (read every POLL_SECONDS, off the event loop), each supervised for its heartbeat timeout,
and their states and counts reported through the writer."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core.receiver_links import (
    CONNECT,
    DEFAULT_BAUD,
    DEFAULT_FRAMING,
    FAILED,
    IDLE,
    LISTEN,
    UP,
    LinkSettings,
    line_number,
)
from alarmhub.dc09.server import Writer
from alarmhub.receivers.frames import Options
from alarmhub.receivers.protocols import PROTOCOLS
from alarmhub.receivers.session import Keeper, Link, Traffic
from alarmhub.receivers.transports import Connect, Listen, Serial, Transport
from alarmhub.store import receivers as store
from alarmhub.store.link_leases import LinkLeases
from alarmhub.store.receivers import LinkReport
from alarmhub.wake import woken

log = logging.getLogger("alarmhub.receivers")
POLL_SECONDS = 2.0
REPORT_SECONDS = 2.0
CHECK_SECONDS = 0.25
HELD_ALONE = (LISTEN,)  # transports every node runs; the others need the link's lease


@dataclass
class _Running:
    """A link this node runs: its settings, its connections and its supervision state."""

    settings: LinkSettings
    link: Link
    transport: Transport
    state: str
    since: float  # when supervision started (monotonic): a full timeout before it can fail
    elsewhere_at: float = 0.0  # a listen link's last frame on another node (monotonic)
    reported: tuple[Any, ...] | None = None
    frames_reported: int = 0

    def key(self) -> tuple[Any, ...]:
        """What a report says that is worth writing again when it changes."""
        t = self.link.traffic
        return (self.state, t.frames, t.acks, t.naks, t.per_minute())

    def report(self, node_id: str) -> LinkReport:
        t = self.link.traffic
        return LinkReport(
            self.settings.name,
            self.state,
            node_id,
            t.last_seen_us,
            t.last_frame,
            t.frames,
            t.acks,
            t.naks,
            t.unreadable,
            t.per_minute(),
        )


class LinkSupervisor:
    """Runs this node's receiver links: ``start()`` after the writer, ``stop()`` before it.

    A ``--listen`` link runs on every node; a ``--connect`` or ``--serial`` link on the one node
    holding its lease (:mod:`alarmhub.store.link_leases` on PostgreSQL; on SQLite this node holds
    all). No frame and no link test for a link's heartbeat timeout makes it ``failed``
    (``store.receivers.report`` sets failed_us, supervision raises RECEIVER LINK FAILURE); its
    next frame makes it ``up`` (the restoral). Both are reported at once, counts every
    REPORT_SECONDS when they changed."""

    def __init__(
        self,
        engine: Engine,
        writer: Writer,
        keeper: Keeper,
        node_id: str,
        *,
        poll_seconds: float = POLL_SECONDS,
        report_seconds: float = REPORT_SECONDS,
    ) -> None:
        self._engine = engine
        self._writer = writer
        self._keeper = keeper
        self.node_id = node_id
        self._poll_seconds = poll_seconds
        self._report_seconds = report_seconds
        self._leases = LinkLeases(engine) if engine.dialect.name != "sqlite" else None
        self.running: dict[str, _Running] = {}
        self._lines: dict[tuple[str, int, int], str] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._urgent = asyncio.Event()
        self._refused: set[LinkSettings] = set()  # settings no link can run with (logged once)

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._poll(), name="receiver-links"),
            asyncio.create_task(self._supervise(), name="receiver-link-reports"),
        ]

    async def stop(self) -> None:
        """Stop every link (the answers in flight go out), report them, let go of the leases."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await asyncio.gather(*(run.transport.stop() for run in self.running.values()))
        await self._report()
        for name in list(self.running):
            self._forget(name)
        if self._leases is not None:
            await asyncio.to_thread(self._leases.release)

    # following provisioning -----------------------------------------------------------------

    async def _poll(self) -> None:
        while True:
            try:
                await self.follow()
            except Exception as exc:  # the database may be away: the links keep running
                log.warning("receiver links not read", extra={"error": repr(exc)})
            await asyncio.sleep(self._poll_seconds)

    def _read(self) -> tuple[list[LinkSettings], dict[tuple[str, int, int], str], dict[str, Any]]:
        with self._engine.connect() as conn:
            links = store.links(conn)
            lines = store.line_map(conn)
            states = {row["name"]: row for row in store.link_states(conn)}
        return links, lines, states

    async def follow(self) -> None:
        """Start, restart and stop links as the station's provisioning now says."""
        links, self._lines, states = await asyncio.to_thread(self._read)
        single = [x.name for x in links if x.transport not in HELD_ALONE]
        if self._leases is None:
            held = set(single)
        else:
            held = await asyncio.to_thread(self._leases.renew, single)
        wanted = {x.name: x for x in links if x.transport in HELD_ALONE or x.name in held}
        changed: dict[str, _Running] = {}  # restarted with new settings: what it saw goes on
        for name, run in list(self.running.items()):
            if wanted.get(name) != run.settings:
                await self._stop_link(name, "changed" if name in wanted else "removed")
                if name in wanted:
                    changed[name] = run
        for name, settings in wanted.items():
            if name not in self.running:
                self._start_link(settings, states.get(name, {}), changed.get(name))
            elif self._leases is not None and settings.transport in HELD_ALONE:
                self._seen_elsewhere(self.running[name], states.get(name, {}))

    def _seen_elsewhere(self, run: _Running, state: dict[str, Any]) -> None:
        """A listen link another node reported a frame of: alive, though not here."""
        seen = state.get("last_seen_us")
        if state.get("held_by") == self.node_id or seen is None:
            return
        ago = max(0.0, (now_us() - seen) / 1e6)
        run.elsewhere_at = max(run.elsewhere_at, time.monotonic() - ago)
        if run.state == FAILED and ago < run.settings.heartbeat_timeout_s and not state["failed"]:
            run.state = IDLE  # the node that has its connection reported the restoral
            run.reported = run.key()

    def dnis_of(self, link: str, receiver: str, line: str) -> str | None:
        """The dnis a link's receiver and line map to (compared as numbers), or None."""
        try:
            numbers = line_number(receiver, "receiver"), line_number(line, "line")
        except ValueError:
            return None
        return self._lines.get((link, *numbers))

    def _start_link(
        self, settings: LinkSettings, stored: dict[str, Any], before: _Running | None
    ) -> None:
        """Run a link: after a change of its settings, with what it saw before; else with
        the counts and the failure its last holder reported."""
        name = settings.name
        protocol = PROTOCOLS.get(settings.protocol)
        if protocol is None:
            self._refuse(settings, f"no protocol {settings.protocol!r}")
            return
        traffic = (
            before.link.traffic
            if before is not None
            else Traffic(
                frames=stored.get("frames", 0),
                acks=stored.get("acks", 0),
                naks=stored.get("naks", 0),
                unreadable=stored.get("unreadable", 0),
                last_seen_us=stored.get("last_seen_us"),
                last_frame=stored.get("last_frame"),
            )
        )
        link = Link(
            name,
            protocol,
            Options(line_digits=settings.line_digits),
            self._writer,
            self._keeper,
            functools.partial(self.dnis_of, name),
            traffic=traffic,
        )
        try:
            transport = _transport(link, settings)
        except ValueError as exc:  # an address provisioning should have refused
            self._refuse(settings, str(exc))
            return
        run = _Running(settings, link, transport, IDLE, time.monotonic())
        if before is not None:
            run.state, run.reported = before.state, before.reported
            run.frames_reported = before.frames_reported
        else:
            run.state = FAILED if stored.get("failed") else IDLE
            run.frames_reported = traffic.frames
        link.alive = functools.partial(self._alive, run)
        self.running[name] = run
        transport.start()
        metrics.RECEIVER_LINK_UP.labels(name).set(1 if run.state == UP else 0)
        log.info(
            "receiver link started",
            extra={"link": name, "transport": settings.transport, "address": settings.address},
        )
        self._urgent.set()

    def _refuse(self, settings: LinkSettings, why: str) -> None:
        """A link that cannot run with these settings: logged once, tried again when changed."""
        if settings not in self._refused:
            log.error("receiver link not started", extra={"link": settings.name, "error": why})
            self._refused.add(settings)

    async def _stop_link(self, name: str, why: str) -> None:
        run = self.running[name]
        await run.transport.stop()
        self._forget(name)
        log.info("receiver link stopped", extra={"link": name, "reason": why})

    def _forget(self, name: str) -> None:
        self.running.pop(name, None)
        with contextlib.suppress(KeyError):
            metrics.RECEIVER_LINK_UP.remove(name)

    # supervision ------------------------------------------------------------------------------

    def _alive(self, run: _Running) -> None:
        """A frame or a link test came: the link is up (a restoral when it was failed)."""
        if run.state != UP:
            if run.state == FAILED:
                log.info("receiver link restored", extra={"link": run.settings.name})
            else:
                log.info("receiver link up", extra={"link": run.settings.name})
            run.state = UP
            metrics.RECEIVER_LINK_UP.labels(run.settings.name).set(1)
            self._urgent.set()

    def check(self, now: float) -> None:
        """Mark failed the links silent for their heartbeat timeout."""
        for name, run in self.running.items():
            last = max(run.since, run.link.traffic.seen_at, run.elsewhere_at)
            if run.state != FAILED and now - last > run.settings.heartbeat_timeout_s:
                run.state = FAILED
                metrics.RECEIVER_LINK_UP.labels(name).set(0)
                log.warning(
                    "receiver link failed",
                    extra={"link": name, "timeout_s": run.settings.heartbeat_timeout_s},
                )
                self._urgent.set()

    async def _supervise(self) -> None:
        last_report = time.monotonic()
        while True:
            await woken(self._urgent, CHECK_SECONDS)
            now = time.monotonic()
            self.check(now)
            if self._urgent.is_set() or now - last_report >= self._report_seconds:
                self._urgent.clear()
                last_report = now
                await self._report()

    def _reporting(self, run: _Running) -> bool:
        """Whether this node reports ``run``: always, but for a listen link on a shared
        database only the node that has its connection or had frames since its last report,
        or finds it failed."""
        if self._leases is None or run.settings.transport not in HELD_ALONE:
            return True
        frames = run.link.traffic.frames
        return bool(run.transport.sessions) or run.state == FAILED or frames != run.frames_reported

    async def _report(self) -> None:
        """Write the state and counts of the links that changed since their last report."""
        changed: list[tuple[_Running, tuple[Any, ...]]] = []
        for run in self.running.values():
            key = run.key()
            if key != run.reported and self._reporting(run):
                changed.append((run, key))
        if not changed:
            return
        reports = [run.report(self.node_id) for run, _ in changed]
        try:
            await self._writer.run(
                functools.partial(store.report, reports=reports, now_us=now_us())
            )
        except Exception as exc:  # written at the next report
            log.warning("receiver link states not reported", extra={"error": repr(exc)})
            return
        for run, key in changed:
            run.reported = key
            run.frames_reported = run.link.traffic.frames


def _transport(link: Link, settings: LinkSettings) -> Transport:
    if settings.transport == LISTEN:
        return Listen(link, settings.address)
    if settings.transport == CONNECT:
        return Connect(link, settings.address)
    baud = settings.baud or DEFAULT_BAUD
    return Serial(link, settings.address, baud, settings.framing or DEFAULT_FRAMING)
