"""A node of several worker processes (``serve --workers N``), as its parent process runs it.

The parent binds every listener once (HTTP, ``/metrics``, DC-09 TCP and UDP) and hands the sockets
to N workers (:mod:`alarmhub.node.worker_process`), which all accept on them: the kernel gives each
connection, and each datagram, to one of them. In front of the node's one writer process, which
listens for the workers (and the delivery process) on a Unix socket (mode 0600) and answers each
frame on the channel it came on. That socket and the workers' metric files are in the node's run
directory (:mod:`alarmhub.node.run_dir`). The parent also runs what a node has once: the schema
upgrade, the delivery process, the SQLite checkpoints.

Whichever child dies is started again: a worker (after its connections are gone; what it answered is
committed), or the writer (every worker fails its waiting requests with STORE-1 and connects to the
new one). SIGTERM or SIGINT stops the workers first (each answers what it accepted), then the
delivery process, then the writer (it commits what it has; killed if it has not ended within
``store.watchdog.stuck_seconds``, a worker within STOP_SECONDS). The workers die with the parent,
SIGKILL included (:mod:`alarmhub.node.lifeline`); the writer and the delivery process see their
channel to it close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Callable
from typing import Any

from alarmhub import files, metrics
from alarmhub import settings as settings_module
from alarmhub.node import app, run_dir, spawner
from alarmhub.node.server import Bound
from alarmhub.node.worker_process import READY
from alarmhub.outbound.delivery_process import DeliveryProcess
from alarmhub.settings import Settings
from alarmhub.store import engine as store_engine
from alarmhub.store import framing, watchdog
from alarmhub.store.writer import writer_config

log = logging.getLogger("alarmhub.node.workers")
LEAD_LOCK = "supervision.lock"
METRICS_DIR = "metrics"
START_SECONDS = 60.0
STOP_SECONDS = 90.0
"""A stopping worker may take its HTTP grace (30 s) and its DC-09 frames' (30 s) in turn."""
RESTART_SECONDS = 1.0
WATCH_SECONDS = 0.1


def serve(settings: Settings, bound: Bound, on_ready: Callable[[], None] | None = None) -> None:
    """Run the node's parent until SIGTERM or SIGINT; every child stopped in order."""
    asyncio.run(Node(settings, bound).run(on_ready))


def _fds(bound: Bound) -> list[int]:
    return [s.fileno() for s in bound.http] + [s.fileno() for pair in bound.dc09 for s in pair]


async def _exited(process: spawner.ChildProcess | None) -> int | None:
    """Wait until ``process`` has ended (None: at once); its exit code."""
    while process is not None and process.poll() is None:
        await asyncio.sleep(WATCH_SECONDS)
    return process.returncode if process is not None else None


async def _first_frame(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> Any:
    """The first frame read from ``sock``; None when it closes first."""
    buffer = bytearray()
    while not (messages := framing.decode_all(buffer)):
        data = await loop.sock_recv(sock, 4096)
        if not data:
            return None
        buffer += data
    return messages[0]


async def _spawn(
    module: str,
    config: dict[str, Any],
    *args: str,
    fds: list[int] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[spawner.ChildProcess, socket.socket]:
    """Start ``python -m module FD *args`` on its end of a new socket pair (with ``fds`` passed
    too) and send it ``config`` as its first frame (never on the command line); the process
    and our end of the pair."""
    ours, theirs = socket.socketpair()
    try:
        process = await spawner.start_child(
            module, [str(theirs.fileno()), *args], [*(fds or []), theirs.fileno()], env
        )
    finally:
        theirs.close()
    ours.setblocking(False)
    await asyncio.get_running_loop().sock_sendall(ours, framing.encode(config))
    return process, ours


class _Writer:
    """The node's writer process, listening for the workers at ``address``."""

    def __init__(self, settings: Settings, address: str) -> None:
        alone = settings.database.startswith("sqlite")
        # a node of its own database always leads supervision; on a shared one, as the worker
        # that holds the lead tells the writer
        self._config = {**writer_config(settings, leader=alone, listen=address),
                        "parent_reads": False}  # fmt: skip
        self._stop_seconds = watchdog.stuck_seconds(settings.store_commit_timeout)
        self.process: spawner.ChildProcess | None = None
        self._sock: socket.socket | None = None

    async def start(self) -> None:
        self.process, ours = await _spawn("alarmhub.store.writer_process", self._config)
        self._sock = ours
        try:
            async with asyncio.timeout(START_SECONDS):
                ready = await _first_frame(asyncio.get_running_loop(), ours)
        except TimeoutError:
            ready = None
        if ready is None:
            self.process.kill()
            raise RuntimeError("the writer process did not start")
        log.info("writer process started", extra={"pid": self.process.pid})

    async def complete_checkpoint(self) -> None:
        """Ask it to complete the node's checkpoint of the SQLite log (``sqlite.checkpoint``)."""
        if self._sock is not None:
            request = framing.CHECKPOINT_REQUEST
            await asyncio.get_running_loop().sock_sendall(self._sock, request)

    async def stop(self) -> None:
        """Close its channel: it commits what it has, routes, and exits; killed when it has not
        within ``watchdog.stuck_seconds`` (its watchdog ends a database call stuck that long)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        try:
            await asyncio.wait_for(_exited(self.process), self._stop_seconds)
        except TimeoutError:
            if self.process is not None:
                log.error("writer did not stop; killed", extra={"seconds": self._stop_seconds})
                self.process.kill()
                await _exited(self.process)


class _Worker:
    """One worker process, number ``index``."""

    def __init__(self, index: int, config: dict[str, Any], fds: list[int], env: dict[str, str]):
        self.index = index
        self._config = {**config, "index": index}
        self._fds = fds
        self._env = env
        self.process: spawner.ChildProcess | None = None
        self._sock: socket.socket | None = None

    async def start(self) -> None:
        if self._sock is not None:
            self._sock.close()
        # started by subprocess from this thread, the event loop's: the kernel kills a child
        # whose parent *thread* ends (PR_SET_PDEATHSIG), so never from a thread of a pool (a
        # child the spawner forks has the node's first thread for parent)
        self.process, ours = await _spawn(
            "alarmhub.node.worker_process",
            self._config,
            str(os.getpid()),
            fds=self._fds,
            env=self._env,
        )
        self._sock = ours
        try:
            async with asyncio.timeout(START_SECONDS):
                ready = await asyncio.get_running_loop().sock_recv(ours, len(READY))
        except TimeoutError:
            ready = b""
        if ready != READY:
            self.process.kill()
            raise RuntimeError(f"worker {self.index} did not start")
        log.info("worker started", extra={"worker": self.index, "pid": self.process.pid})

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    async def stop(self) -> None:
        """Wait until it has ended after :meth:`terminate` (killed if it takes too long)."""
        try:
            await asyncio.wait_for(_exited(self.process), STOP_SECONDS)
        except TimeoutError:
            if self.process is not None:
                log.error("worker did not stop; killed", extra={"worker": self.index})
                self.process.kill()
                await _exited(self.process)
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class Node:
    """The parent of a node of several workers: its children, started, kept and stopped."""

    def __init__(self, settings: Settings, bound: Bound) -> None:
        self.settings = settings
        self.bound = bound
        # the node's own: the writer's socket and the workers' metric files (mkdtemp: 0700)
        self.run_dir = run_dir.make()
        self.address = str(self.run_dir / run_dir.WRITER_SOCKET)
        self.metrics_dir = self.run_dir / METRICS_DIR
        self.writer = _Writer(settings, self.address)
        config = {
            "settings": settings_module.to_wire(settings),
            "http": [
                [listener.host, listener.port, list(listener.parts), sock.fileno()]
                for listener, sock in zip(bound.listeners, bound.http, strict=False)
            ],
            "metrics": (
                [bound.metrics.host, bound.metrics.port, bound.http[-1].fileno()]
                if bound.metrics is not None
                else None
            ),
            "dc09": [[tcp.fileno(), udp.fileno()] for tcp, udp in bound.dc09],
            "writer": self.address,
            "lead_lock": str((settings.data_dir / LEAD_LOCK).absolute()),
        }
        env = {**os.environ, metrics.MULTIPROCESS_DIR: str(self.metrics_dir)}
        self.workers = [
            _Worker(index, config, _fds(bound), env) for index in range(settings.workers)
        ]

    async def run(self, on_ready: Callable[[], None] | None) -> None:
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()

        def stop(signame: str) -> None:
            log.info("stop requested", extra={"signal": signame})
            stopping.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop, sig.name)
        answer_seconds = watchdog.stuck_seconds(self.settings.store_commit_timeout)
        engine = store_engine.open_engine(self.settings.database, answer_seconds=answer_seconds)
        deliveries = DeliveryProcess(self.settings, engine, self.metrics_dir, self.address)
        tasks: list[asyncio.Task[None]] = []
        try:
            await asyncio.to_thread(store_engine.upgrade, engine)
            self.metrics_dir.mkdir(mode=files.DIRECTORY_MODE)
            await self.writer.start()
            await deliveries.start()
            if engine.dialect.name == "sqlite":
                checkpoints = app.checkpoints(engine, self.writer)
                tasks.append(asyncio.create_task(checkpoints, name="checkpoint"))
            await asyncio.gather(*(worker.start() for worker in self.workers))
            log.info("node started", extra={"workers": len(self.workers), "run_dir": self.run_dir})
            if on_ready is not None and not stopping.is_set():
                on_ready()
            tasks.append(asyncio.create_task(self._keep_writer(), name="keep writer"))
            tasks += [
                asyncio.create_task(self._keep(worker), name=f"keep worker {worker.index}")
                for worker in self.workers
            ]
            await stopping.wait()
        finally:
            await self._stop(tasks, deliveries)
            engine.dispose()
            log.info("node stopped")

    async def _stop(self, tasks: list[asyncio.Task[None]], deliveries: DeliveryProcess) -> None:
        """Workers first (each answers what it accepted), then the delivery process, then the
        writer (it commits what the workers handed it)."""
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for worker in self.workers:
            worker.terminate()
        await asyncio.gather(*(worker.stop() for worker in self.workers))
        await deliveries.stop()
        await self.writer.stop()
        run_dir.remove(self.run_dir)

    async def _keep(self, worker: _Worker) -> None:
        """Start ``worker`` again whenever it ends."""
        while True:
            code = await _exited(worker.process)
            if worker.process is not None:
                metrics.process_ended(worker.process.pid, str(self.metrics_dir))
            log.error(
                "worker process ended; restarting",
                extra={"worker": worker.index, "exit_code": code},
            )
            await asyncio.sleep(RESTART_SECONDS)
            try:
                await worker.start()
            except (OSError, RuntimeError) as exc:
                log.error(
                    "worker restart failed", extra={"worker": worker.index, "error": repr(exc)}
                )

    async def _keep_writer(self) -> None:
        """Start the writer again whenever it ends (the workers connect to the new one)."""
        while True:
            code = await _exited(self.writer.process)
            log.error("writer process ended; restarting", extra={"exit_code": code})
            await asyncio.sleep(RESTART_SECONDS)
            try:
                await self.writer.start()
            except (OSError, RuntimeError) as exc:
                log.error("writer process restart failed", extra={"error": repr(exc)})
