"""Assembles a node: the runtime (store, writer, caches, supervisors) and its ASGI apps."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Literal

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from alarmhub import console, openapi, secret_key
from alarmhub.heartbeats import HeartbeatSupervisor
from alarmhub.rx import routes as rx_routes
from alarmhub.rx.auth import GrantCache
from alarmhub.settings import Settings
from alarmhub.store import engine as store_engine
from alarmhub.store import sqlite
from alarmhub.store.leadership import Leadership
from alarmhub.store.writer import SignalWriter
from alarmhub.xm import routes as xm_routes
from alarmhub.xm.auth import NonceBook, QueryAuth

log = logging.getLogger("alarmhub.app")
Part = Literal["rx", "rest"]
CHECKPOINT_SECONDS = 1.0


class Runtime:
    """Everything a node runs besides its HTTP listeners, started and stopped as one."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = store_engine.open_engine(settings.database)
        self.writer = SignalWriter(self.engine, settings)
        self.grants = GrantCache(self.engine)
        self.query_auth = QueryAuth(
            self.engine,
            secret_key.load(settings.data_dir),
            NonceBook(self.writer, shared=self.engine.dialect.name != "sqlite"),
        )
        self.leadership = Leadership(self.engine)
        self.heartbeats = HeartbeatSupervisor(
            self.writer,
            self.leadership,
            settings.heartbeat_timeout,
            settings.heartbeat_flush_seconds,
        )
        self.console = console.LiveFeed(self.engine)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await asyncio.to_thread(store_engine.upgrade, self.engine)
        await self.writer.start()
        await self.grants.start()
        await self.query_auth.start()
        await self.leadership.start()
        await self.writer.run(self.heartbeats.load)
        await self.heartbeats.start()
        await self.console.start()
        if self.engine.dialect.name == "sqlite":
            self._tasks.append(asyncio.create_task(self._checkpoints(), name="checkpoint"))
        log.info("node started", extra=self.settings.masked())

    async def _checkpoints(self) -> None:
        while True:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            try:
                await asyncio.to_thread(sqlite.checkpoint, self.engine)
            except Exception as exc:
                log.warning("checkpoint failed", extra={"error": repr(exc)})

    async def stop(self) -> None:
        """End the consoles' event streams, stop supervision, flush heartbeats, commit every
        signal still queued."""
        await self.console.stop()
        for task in self._tasks:
            task.cancel()
        await self.grants.stop()
        await self.query_auth.stop()
        await self.heartbeats.stop()
        await self.leadership.stop()
        await self.writer.stop()
        self.engine.dispose()
        log.info("node stopped")

    def database_reachable(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:
            log.warning("database unreachable", extra={"error": repr(exc)})
            return False
        return True


def common_routes(runtime: Runtime) -> list[BaseRoute]:
    async def healthz(_: Request) -> Response:
        ok = await asyncio.to_thread(runtime.database_reachable)
        if ok and runtime.writer.available:
            return JSONResponse({"status": "ok"})
        if not ok:
            reason = "database unreachable"
        else:
            reason = "shutting down" if runtime.writer.closing else "writer restarting"
        return JSONResponse({"status": "error", "message": reason}, status_code=503)

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    async def openapi_json(_: Request) -> Response:
        return JSONResponse(openapi.document())

    return [
        Route("/healthz", healthz),
        Route("/metrics", metrics),
        Route("/openapi.json", openapi_json),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    body = {
        "status_code": status,
        "status": "error",
        "error_code": f"HTTP-{status}",
        "message": str(exc.detail).lower(),
    }
    return JSONResponse(body, status_code=status, headers=exc.headers)


def build_app(runtime: Runtime, parts: Sequence[Part] = ("rx", "rest")) -> Starlette:
    """One ASGI app serving the given interfaces, with health and metrics on each. The
    signaling routes come first: they take nearly every request, and the router tries its
    routes in order (each miss costs a regular-expression match)."""
    routes: list[BaseRoute] = []
    if "rx" in parts:
        routes += rx_routes.routes(runtime)
    routes += common_routes(runtime)
    if "rest" in parts:
        routes += xm_routes.routes(runtime)
        routes += console.routes(runtime)
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
