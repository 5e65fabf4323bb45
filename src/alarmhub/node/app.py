"""The composition root: assembles a node, its runtime (store, writer, caches, supervisors, the
DC-09 receiver) and its ASGI apps. The only module that wires dependencies: each adapter gets
the few things it uses from here, never the runtime itself.

A runtime starts its signal writer, and its delivery workers (webhooks, notifications), as
processes of their own unless given another ``start_writer`` (see :mod:`alarmhub.store.writer`)
or ``deliveries_apart=False``:
the choices left to whoever embeds a node, e.g. tests that run its app in-process with the
writer in a thread."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Protocol

from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text
from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from alarmhub import api, console, metrics, openapi, secret_key
from alarmhub.api import problems
from alarmhub.dc09 import server as dc09_server
from alarmhub.dc09.accounts import AccountBook
from alarmhub.node import run_dir
from alarmhub.node.heartbeats import HeartbeatSupervisor
from alarmhub.node.listener_limits import StreamBudget
from alarmhub.outbound import delivery_process
from alarmhub.outbound.automation_outputs import AutomationOutputs
from alarmhub.outbound.delivery import DeliveryWorker
from alarmhub.outbound.delivery_process import DeliveryProcess
from alarmhub.outbound.writer_records import WriterRecords
from alarmhub.receivers.links import LinkSupervisor
from alarmhub.rx import routes as rx_routes
from alarmhub.rx.auth import GrantCache
from alarmhub.settings import Settings
from alarmhub.store import engine as store_engine
from alarmhub.store import outputs as store_outputs
from alarmhub.store import sqlite, watchdog
from alarmhub.store.leadership import Leadership
from alarmhub.store.receivers import FrameKeeper
from alarmhub.store.writer import SignalWriter, StartWriter, start_process
from alarmhub.xm import routes as xm_routes
from alarmhub.xm.auth import NonceBook, QueryAuth

log = logging.getLogger("alarmhub.node.app")
Part = Literal["rx", "rest"]
CHECKPOINT_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class WorkerRole:
    """What a worker process of a node with several (``serve --workers N``) shares with the
    others: the node's writer (listening at ``writer_address``) and the file whose lock makes
    one of them the supervision leader on SQLite. The node's parent process runs the delivery
    process, the schema upgrade and the SQLite checkpoints for them all."""

    index: int
    writer_address: str
    lead_lock: Path


class Runtime:
    """Everything a node runs besides its HTTP listeners, started and stopped as one::

        async with Runtime(settings, dc09_sockets) as runtime:
            ...  # serve

    The DC-09 receiver (when given sockets) and the receiver links start last and stop first;
    the links run in one process of a node (the node's, or its worker 0). Given a ``worker``
    role, it is one of the node's workers: per-process state that must hold for the whole node
    (nonces, supervision, its lead) goes through the database as between nodes."""

    def __init__(
        self,
        settings: Settings,
        dc09_sockets: Sequence[dc09_server.Sockets] = (),
        *,
        start_writer: StartWriter = start_process,
        deliveries_apart: bool = True,
        worker: WorkerRole | None = None,
    ) -> None:
        self.settings = settings
        self.worker = worker
        # a statement on a silent connection fails rather than hold its thread (store.answering)
        answer_seconds = watchdog.stuck_seconds(settings.store_commit_timeout)
        self.engine = store_engine.open_engine(settings.database, answer_seconds=answer_seconds)
        station_key = secret_key.load(settings.data_dir)
        address = worker.writer_address if worker is not None else None
        # a node of one process on SQLite: its delivery workers (a process of their own or
        # in this one) record through its writer, which listens in the node's run directory
        self._run_dir: Path | None = None
        listen = None
        if worker is None and self.engine.dialect.name == "sqlite":
            self._run_dir = run_dir.make()
            listen = str(self._run_dir / run_dir.WRITER_SOCKET)
        self.writer = SignalWriter(
            self.engine, settings, start_writer, address=address, listen=listen
        )
        self.grants = GrantCache(self.engine)
        alone = self.engine.dialect.name == "sqlite" and worker is None
        self.query_auth = QueryAuth(
            self.engine, station_key, NonceBook(self.writer, shared=not alone)
        )
        self.leadership = Leadership(
            self.engine, lock_path=worker.lead_lock if worker is not None else None
        )
        self.leadership.listeners.append(self.writer.set_leader)
        self.heartbeats = HeartbeatSupervisor(
            self.writer,
            self.leadership,
            settings.heartbeat_timeout,
            settings.heartbeat_flush_seconds,
        )
        self.live_feed = console.LiveFeed(self.engine)
        self._delivery_engine = None
        self._recorder: WriterRecords | None = None  # for the workers in this process
        self.deliveries: list[DeliveryProcess | DeliveryWorker[Any, Any]] = []
        if worker is not None:
            pass  # one delivery process a node: its parent's
        elif deliveries_apart:
            self.deliveries = [DeliveryProcess(settings, self.engine, writer=listen)]
        else:
            # deliveries can be derived again from what is durable: their commits need not wait
            self._delivery_engine = store_engine.open_engine(
                settings.database, synchronous=False, answer_seconds=answer_seconds
            )
            if listen is not None:
                self._recorder = WriterRecords(listen, answer_seconds)
            self.deliveries = [
                *delivery_process.workers(self._delivery_engine, settings.data_dir,
                                          settings.timezone,
                                          allow_private=settings.webhook_allow_private,
                                          recorder=self._recorder)
            ]  # fmt: skip
        self.dc09: dc09_server.Receiver | None = None
        if dc09_sockets:
            accounts = AccountBook(
                self.engine,
                self.writer,
                self.leadership,
                station_key,
                settings.dc09_supervision_seconds,
                settings.heartbeat_flush_seconds,
            )
            self.dc09 = dc09_server.Receiver(
                accounts,
                self.writer,
                dc09_sockets,
                max_connections=settings.dc09_max_connections,
                max_per_address=settings.dc09_max_connections_per_address,
                idle_seconds=settings.dc09_idle_seconds,
            )
        self.links: LinkSupervisor | None = None
        self.outputs: AutomationOutputs | None = None
        if worker is None or worker.index == 0:  # the links and the outputs: in one process
            node_id = f"{socket.gethostname()[:40]}:{os.getpid()}"
            self.links = LinkSupervisor(self.engine, self.writer, FrameKeeper(self.engine), node_id)
            self.outputs = AutomationOutputs(store_outputs, node_id, engine=self.engine)
            self.writer.queued_listeners.append(self.outputs.wake)
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Runtime:
        if self.worker is None:  # a worker's parent has upgraded the schema
            await asyncio.to_thread(store_engine.upgrade, self.engine)
        await self.writer.start()
        await self.grants.start()
        await self.query_auth.start()
        await self.leadership.start()
        await self.writer.run(self.heartbeats.load, bounded=False)  # a read, once at the start
        await self.heartbeats.start()
        await self.live_feed.start()
        for deliveries in self.deliveries:
            await deliveries.start()
        self._tasks.append(asyncio.create_task(metrics.tallies(), name="metrics-tallies"))
        if self.engine.dialect.name == "sqlite" and self.worker is None:
            self._tasks.append(
                asyncio.create_task(checkpoints(self.engine, self.writer), name="checkpoint")
            )
        log.info("node started", extra=self.settings.masked())
        if self.dc09 is not None:
            await self.dc09.start()
        if self.links is not None:
            await self.links.start()
        if self.outputs is not None:
            await self.outputs.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the receiver links and the DC-09 listeners (frames in flight are answered), end
        the consoles' event streams, stop supervision, flush heartbeats, commit every signal
        still queued."""
        if self.links is not None:
            await self.links.stop()
        if self.dc09 is not None:
            await self.dc09.stop()
        if self.outputs is not None:
            await self.outputs.stop()
        await self.live_feed.stop()
        for deliveries in self.deliveries:
            await deliveries.stop()
        if self._recorder is not None:
            await self._recorder.close()
        for task in self._tasks:
            task.cancel()
        await self.grants.stop()
        await self.query_auth.stop()
        await self.heartbeats.stop()
        await self.leadership.stop()
        await self.writer.stop()
        if self._delivery_engine is not None:
            self._delivery_engine.dispose()
        self.engine.dispose()
        if self._run_dir is not None:
            run_dir.remove(self._run_dir)
        metrics.flush_tallies()  # the counts of the signals answered while stopping
        log.info("node stopped")

    def database_reachable(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:
            log.warning("database unreachable", extra={"error": repr(exc)})
            return False
        return True


class Checkpointing(Protocol):
    """The node's writer, as the checkpoints use it."""

    async def complete_checkpoint(self) -> None: ...


async def checkpoints(engine: Engine, writer: Checkpointing) -> None:
    """Copy the SQLite log into the database file every CHECKPOINT_SECONDS; once the log is
    large, the writer process completes the checkpoint (see sqlite.py)."""
    while True:
        await asyncio.sleep(CHECKPOINT_SECONDS)
        try:
            if await asyncio.to_thread(sqlite.checkpoint, engine) >= sqlite.RESTART_FRAMES:
                await writer.complete_checkpoint()
        except Exception as exc:
            log.warning("checkpoint failed", extra={"error": repr(exc)})


def common_routes(runtime: Runtime) -> list[BaseRoute]:
    async def healthz(_: Request) -> Response:
        writer = runtime.writer
        writer.probe()  # another worker's commit may be the one stuck
        if not writer.committing:  # decisions §14: the load balancer's check
            reason = "database not committing"
        elif not await asyncio.to_thread(runtime.database_reachable):
            reason = "database unreachable"
        elif writer.available:
            return JSONResponse({"status": "ok"})
        else:
            reason = "shutting down" if writer.closing else "writer restarting"
        return JSONResponse({"status": "error", "message": reason}, status_code=503)

    async def metrics_text(_: Request) -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    async def openapi_json(_: Request) -> Response:
        return JSONResponse(openapi.document())

    return [
        Route("/healthz", healthz),
        Route("/metrics", metrics_text),
        Route("/openapi.json", openapi_json),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    """An HTTP error on any listener (404, 405, ...) in the signaling interface's envelope."""
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    if request.url.path.startswith(api.BASE):  # the integrator API answers in problem details
        code = problems.NOT_FOUND if status == 404 else problems.INPUT
        return problems.problem_response(problems.ApiProblem(code, str(exc.detail), status))
    return rx_routes.envelope_response(
        status, f"HTTP-{status}", str(exc.detail).lower(), exc.headers
    )


def build_app(runtime: Runtime, parts: Sequence[Part] = ("rx", "rest")) -> Starlette:
    """One ASGI app serving the given interfaces, with health and metrics on each. The
    signaling routes come first: they take nearly every request, and the router tries its
    routes in order (each miss costs a regular-expression match)."""
    settings = runtime.settings
    routes: list[BaseRoute] = []
    if "rx" in parts:
        routes += rx_routes.routes(
            runtime.grants, runtime.writer, runtime.heartbeats, settings.max_body_bytes
        )
    routes += common_routes(runtime)
    if "rest" in parts:
        routes += xm_routes.routes(
            runtime.query_auth,
            runtime.engine,
            settings.zone,
            settings.rest_max_body_bytes,
            settings.xmhist_max_records,
        )
        streams = StreamBudget(settings)  # this listener's event streams, off its connection cap
        routes += console.routes(
            runtime.engine, runtime.writer, runtime.live_feed, streams, settings.zone
        )
        routes += api.routes(
            runtime.engine,
            runtime.writer,
            settings.rest_max_body_bytes,
            streams,
            settings.zone,
            closed=lambda: runtime.live_feed.closed,  # the node stops: event streams end too
        )
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
