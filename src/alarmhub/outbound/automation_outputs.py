"""The automation outputs a node runs: read every POLL_SECONDS (off the event loop), each run by
an :class:`~alarmhub.outbound.automation.OutputSender` while this node holds its lane's lease
(renewed at each reading), stopped when it loses it, changed or removed; their states reported
to the store, their backlogs to the metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core.outputs import LEASE_SECONDS, RENEW_SECONDS, OutputReport, OutputSettings
from alarmhub.outbound.automation import Database, EngineDatabase, OutputSender, OutputStore

log = logging.getLogger("alarmhub.outputs")
POLL_SECONDS = RENEW_SECONDS  # the settings read and the leases renewed at once
REPORT_SECONDS = 2.0
CHECK_SECONDS = 0.25
STOP_SECONDS = 5.0
HELD_SECONDS = LEASE_SECONDS - RENEW_SECONDS
"""A lease not renewed for this long stops its sender: it runs out before another node can
take the output over."""


@dataclass
class _Running:
    sender: OutputSender
    task: asyncio.Task[None]
    held_at: float  # monotonic: the last renewal of its lease
    reported: OutputReport | None = field(default=None)


class AutomationOutputs:
    """Runs this node's automation outputs: :meth:`start` with the receiver links,
    :meth:`stop` before the database closes (each output's lane let go, for the next node)."""

    def __init__(
        self,
        store: OutputStore,
        node: str,
        *,
        engine: Engine | None = None,
        database: Database | None = None,
        poll_seconds: float = POLL_SECONDS,
        report_seconds: float = REPORT_SECONDS,
        held_seconds: float = HELD_SECONDS,
    ) -> None:
        if database is None:
            assert engine is not None, "an engine or a database"
            database = EngineDatabase(engine)
        self._store = store
        self._db = database
        self.node = node
        self._poll_seconds = poll_seconds
        self._report_seconds = report_seconds
        self._held_seconds = held_seconds
        self.running: dict[int, _Running] = {}
        self._refused: set[OutputSettings] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._urgent = asyncio.Event()

    def wake(self) -> None:
        """Frames were queued (this node's routing committed some): every idle sender reads its
        queue now rather than at its next poll."""
        for run in self.running.values():
            run.sender.wake()

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._poll(), name="automation-outputs"),
            asyncio.create_task(self._supervise(), name="automation-output-reports"),
        ]

    async def stop(self) -> None:
        """Stop every sender, report them, let go of their lanes."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._report()
        for output_id in list(self.running):
            await self._stop_sender(output_id, "node stopping")
        try:
            await self._db.commit(lambda conn: self._store.release(conn, self.node))
        except Exception as exc:  # the leases run out instead
            log.warning("automation outputs not released", extra={"error": repr(exc)})

    # following the settings and the leases ---------------------------------------------------

    async def _poll(self) -> None:
        while True:
            try:
                await self.follow()
            except Exception as exc:  # the database may be away: the senders keep running
                log.warning("automation outputs not read", extra={"error": repr(exc)})
            await asyncio.sleep(self._poll_seconds)

    async def follow(self) -> None:
        """Renew the leases; start, restart and stop senders as the settings now say."""
        outputs = await self._db.read(self._store.settings)
        # the lease runs from now, however long its commit takes: so does the senders' hold
        at_us, renewed = now_us(), time.monotonic()
        hold = self._store.hold
        held = await self._db.commit(
            lambda conn: {o.output_id for o in outputs if hold(conn, o.output_id, self.node, at_us)}
        )
        wanted = {o.output_id: o for o in outputs if o.output_id in held}
        known = {o.output_id for o in outputs}
        for output_id, run in list(self.running.items()):
            if wanted.get(output_id) != run.sender.settings:
                if output_id not in known:
                    why = "removed"
                elif output_id not in held:
                    why = "held by another node"
                else:
                    why = "changed"
                await self._stop_sender(output_id, why)
        for output_id, settings in wanted.items():
            if output_id in self.running:
                self.running[output_id].held_at = renewed
            else:
                self._start_sender(settings, renewed)

    def _start_sender(self, settings: OutputSettings, held_at: float) -> None:
        try:
            sender = OutputSender(
                settings, self._store, self._db, self.node, changed=self._urgent.set
            )
        except ValueError as exc:  # settings the store should have refused: logged once
            if settings not in self._refused:
                log.error(
                    "automation output not started",
                    extra={"output": settings.name, "error": str(exc)},
                )
                self._refused.add(settings)
            return
        task = asyncio.create_task(sender.run(), name=f"automation output {settings.name}")
        self.running[settings.output_id] = _Running(sender, task, held_at)
        log.info(
            "automation output started",
            extra={
                "output": settings.name,
                "transport": settings.transport,
                "address": " ".join(settings.addresses),
            },
        )

    async def _stop_sender(self, output_id: int, why: str) -> None:
        run = self.running.pop(output_id, None)
        if run is None:  # stopped meanwhile by the other task
            return
        run.task.cancel()
        await asyncio.wait((run.task,), timeout=STOP_SECONDS)
        if not run.task.done():  # never seen: logged rather than stopping the node's stop
            log.error("automation output did not stop", extra={"output": run.sender.name})
        await run.sender.stop()
        for gauge in (metrics.OUTPUT_UP, metrics.OUTPUT_QUEUED, metrics.OUTPUT_OLDEST_QUEUED):
            with contextlib.suppress(KeyError):
                gauge.remove(run.sender.name)
        log.info("automation output stopped", extra={"output": run.sender.name, "reason": why})

    # reports --------------------------------------------------------------------------------

    async def _supervise(self) -> None:
        last_report = time.monotonic()
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CHECK_SECONDS):  # not wait_for: it may swallow a cancel
                    await self._urgent.wait()
            now = time.monotonic()
            for output_id, run in list(self.running.items()):
                if now - run.held_at > self._held_seconds:
                    await self._stop_sender(output_id, "lease not renewed")
                elif run.task.done() and not run.task.cancelled():
                    log.error(
                        "automation output ended",
                        extra={"output": run.sender.name, "error": repr(run.task.exception())},
                    )
                    await self._stop_sender(output_id, "ended")
                else:
                    run.sender.check()
            if self._urgent.is_set() or now - last_report >= self._report_seconds:
                self._urgent.clear()
                last_report = now
                await self._report()
                await self._backlogs()

    async def _report(self) -> None:
        """Write the reports of the senders whose report changed since it was last written."""
        changed = [
            (run, report)
            for run in self.running.values()
            if (report := run.sender.report()) != run.reported
        ]
        if not changed:
            return

        def write(conn: Connection) -> None:
            for run, report in changed:
                self._store.report(conn, run.sender.settings.output_id, report)

        try:
            await self._db.commit(write)
        except Exception as exc:  # written at the next report
            log.warning("automation output states not reported", extra={"error": repr(exc)})
            return
        for run, report in changed:
            run.reported = report

    async def _backlogs(self) -> None:
        """The queued frames and the oldest one's age of each output this node runs."""
        if not self.running:
            return
        at_us = now_us()
        try:
            rows = await self._db.read(lambda conn: self._store.list_outputs(conn, at_us))
        except Exception as exc:
            log.warning("automation output backlogs not read", extra={"error": repr(exc)})
            return
        names = {run.sender.name for run in self.running.values()}
        for row in rows:
            if row["name"] in names:
                metrics.OUTPUT_QUEUED.labels(row["name"]).set(row["queued"])
                metrics.OUTPUT_OLDEST_QUEUED.labels(row["name"]).set(row["oldest_queued_s"] or 0)
