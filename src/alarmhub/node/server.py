"""``alarmhub serve``: one or two HTTP listeners (and one for ``/metrics`` alone if asked), a
clean stop on SIGTERM. Every listener has the limits of :mod:`listener_limits`. With
``workers`` above 1 the listeners are bound here once and served by that many worker
processes (:mod:`alarmhub.node.workers`); with 1, by this process alone."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field

import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from alarmhub.dc09 import server as dc09_server
from alarmhub.gc_tuning import quiet_garbage_collector
from alarmhub.node import listener_limits, spawner
from alarmhub.node.app import Part, Runtime, WorkerRole, build_app, common_routes
from alarmhub.settings import Settings

log = logging.getLogger("alarmhub.node.server")
METRICS_PATH = "/metrics"
CHILD_MODULES = ("alarmhub.store.writer_process", "alarmhub.outbound.delivery_process")
WORKER_MODULE = "alarmhub.node.worker_process"


@dataclass(frozen=True, slots=True)
class Listener:
    """A host and port and the interfaces served there."""

    host: str
    port: int
    parts: tuple[Part, ...]

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


@dataclass(slots=True)
class Bound:
    """The node's listening sockets, bound once before anything starts: one per HTTP listener,
    then the ``/metrics`` one (``metrics``, when asked), and DC-09's TCP and UDP pairs."""

    listeners: Sequence[Listener]
    metrics: Listener | None
    http: list[socket.socket]
    dc09: list[dc09_server.Sockets] = field(default_factory=list)


def bind_all(
    listeners: Sequence[Listener],
    dc09_listen: Sequence[tuple[str, int]] = (),
    metrics_listen: tuple[str, int] | None = None,
) -> Bound:
    """Bind every listener (a port in use is one clear error, before anything starts)."""
    metrics_listener = Listener(*metrics_listen, ()) if metrics_listen else None
    every = [*listeners, *([metrics_listener] if metrics_listener else [])]
    sockets = [bind(listener) for listener in every]
    dc09_sockets = [dc09_server.bind(host, port) for host, port in dc09_listen]
    return Bound(listeners, metrics_listener, sockets, dc09_sockets)


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) into its parts; ValueError when malformed."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not HOST:PORT")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


class _Server(uvicorn.Server):
    """A uvicorn server whose signals the node handles, so several can stop together, and that
    closes the connections whose request headers are overdue (checked once a second)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def on_tick(self, counter: int) -> bool:
        if counter % 10 == 0:
            now = asyncio.get_running_loop().time()
            closed = listener_limits.close_slow_headers(self.server_state.connections, now)
            if closed:
                log.info("connections closed: request headers too slow", extra={"count": closed})
        return await super().on_tick(counter)


async def run(
    settings: Settings,
    listeners: Sequence[Listener],
    on_ready: Callable[[], None] | None = None,
    extra_routes: Callable[[Runtime], list[BaseRoute]] | None = None,
    dc09_listen: Sequence[tuple[str, int]] = (),
    metrics_listen: tuple[str, int] | None = None,
) -> None:
    """Start the runtime, serve until SIGTERM or SIGINT, then stop in order: listeners first
    (in-flight requests finish), then the runtime (DC-09 frames in flight are answered, queued
    signals committed).

    With ``metrics_listen``, ``/metrics`` is served on that address alone and on none of the
    other listeners."""
    bound = bind_all(listeners, dc09_listen, metrics_listen)
    await run_bound(settings, bound, on_ready, extra_routes)


async def run_bound(
    settings: Settings,
    bound: Bound,
    on_ready: Callable[[], None] | None = None,
    extra_routes: Callable[[Runtime], list[BaseRoute]] | None = None,
    worker: WorkerRole | None = None,
) -> None:
    """:func:`run` on sockets bound already; as one of the node's workers when given a
    ``worker`` role (then SIGTERM alone stops it: the node's parent sends it)."""
    async with Runtime(settings, bound.dc09, worker=worker) as runtime:
        stop_signals = (signal.SIGTERM,) if worker else (signal.SIGTERM, signal.SIGINT)
        await _serve(runtime, bound, on_ready, extra_routes, stop_signals)


async def _serve(
    runtime: Runtime,
    bound: Bound,
    on_ready: Callable[[], None] | None,
    extra_routes: Callable[[Runtime], list[BaseRoute]] | None,
    stop_signals: Sequence[signal.Signals],
) -> None:
    """Serve every listener on its socket until told to stop; the in-flight requests finish."""
    listeners, metrics_listener, sockets = bound.listeners, bound.metrics, bound.http
    protocol = listener_limits.guarded_protocol(runtime.settings)
    servers: list[_Server] = []
    for listener in listeners:
        app = build_app(runtime, listener.parts)
        if extra_routes is not None:  # first: the router tries routes in order
            app.router.routes[:0] = extra_routes(runtime)
        if metrics_listener is not None:
            app.router.routes[:] = [r for r in app.router.routes if not _is_metrics(r)]
        servers.append(_Server(_config(app, listener, protocol, runtime.settings)))
    if metrics_listener is not None:
        metrics_app = Starlette(routes=[r for r in common_routes(runtime) if _is_metrics(r)])
        servers.append(_Server(_config(metrics_app, metrics_listener, protocol, runtime.settings)))

    loop = asyncio.get_running_loop()

    def stop(signame: str) -> None:
        log.info("stop requested", extra={"signal": signame})
        runtime.live_feed.close()  # open event streams would hold the graceful stop for 30 s
        for server in servers:
            if server.should_exit:
                server.force_exit = True
            server.should_exit = True

    for sig in stop_signals:
        loop.add_signal_handler(sig, stop, sig.name)
    tasks = [
        asyncio.create_task(server.serve(sockets=[sock]))
        for server, sock in zip(servers, sockets, strict=True)
    ]
    quiet_garbage_collector()
    try:
        while not all(server.started for server in servers):
            if any(task.done() for task in tasks):
                break
            await asyncio.sleep(0.02)
        if all(server.started for server in servers) and on_ready is not None:
            on_ready()
        await asyncio.gather(*tasks)
    finally:
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)


def _is_metrics(route: BaseRoute) -> bool:
    return isinstance(route, Route) and route.path == METRICS_PATH


def _config(
    app: ASGIApp, listener: Listener, protocol: type[asyncio.Protocol], settings: Settings
) -> uvicorn.Config:
    """uvicorn's configuration of one listener: httptools with the listener limits, no
    WebSocket, no lifespan (the node starts and stops the runtime itself), no access log."""
    return uvicorn.Config(
        app,
        host=listener.host,
        port=listener.port,
        loop="none",
        http=protocol,
        ws="none",
        lifespan="off",
        access_log=False,
        log_config=None,
        server_header=False,
        forwarded_allow_ips=settings.trusted_proxies,  # X-Forwarded-For/-Proto from these
        timeout_graceful_shutdown=30,
    )


def bind(listener: Listener) -> socket.socket:
    """The listening socket of ``listener``, bound before anything starts, so that a port in
    use is one clear error and not a half-started node."""
    family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((listener.host, listener.port))
    except OSError as exc:
        sock.close()
        raise SystemExit(f"error: cannot listen on {listener.url()}: {exc.strerror}") from None
    sock.listen(2048)
    return sock


def serve(
    settings: Settings,
    listeners: Sequence[Listener],
    on_ready: Callable[[], None] | None = None,
    extra_routes: Callable[[Runtime], list[BaseRoute]] | None = None,
    dc09_listen: Sequence[tuple[str, int]] = (),
    metrics_listen: tuple[str, int] | None = None,
) -> None:
    """Run the node until it is told to stop: on uvloop in this process, or as the parent of
    ``settings.workers`` worker processes. Its child processes are forked by its spawner,
    started here before anything else runs."""
    if settings.workers > 1 and extra_routes is not None:
        raise ValueError("extra routes are served by a node of one process (workers=1)")
    children = [*CHILD_MODULES, *([WORKER_MODULE] if settings.workers > 1 else [])]
    with spawner.running(children):
        if settings.workers > 1:
            from alarmhub.node import workers

            workers.serve(settings, bind_all(listeners, dc09_listen, metrics_listen), on_ready)
            return
        import uvloop

        uvloop.run(run(settings, listeners, on_ready, extra_routes, dc09_listen, metrics_listen))
