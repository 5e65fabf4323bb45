"""The delivery workers in a process of their own (``python -m
alarmhub.outbound.delivery_process``): every channel's worker (:mod:`alarmhub.outbound.
delivery`), webhooks (:mod:`alarmhub.outbound.webhooks`) and the messages to subscribers,
e-mail and SMS (:mod:`alarmhub.outbound.notify`). Sending is Python work in an event loop
(HTTP, SMTP, signatures, reading what may go), and in a process apart it never holds the node's
interpreter lock while the node answers signals; it runs below the node's CPU priority
(:data:`NICENESS`). On SQLite it hands what it sent to the node's writer to record
(:mod:`alarmhub.outbound.writer_records`), which holds the database's one write lock anyway.

The node starts it with :class:`DeliveryProcess` once the station has something to deliver (a
webhook, a notification gateway or a message queued; a node without any runs no such process),
hands it its settings over a socket pair (never on the command line, where other users of the
machine could read them), starts it again if it dies, and stops it by closing its end: the
process then records what ended, frees its claims and exits. A node killed outright closes that
end too: the process still records what ended and frees its claims, so that another node sends
its lanes at once (below the node's priority on a saturated machine, that may take it a few
seconds more), and exits by itself after ``END_SECONDS`` if it has not ended by then. SIGINT
and SIGTERM are left to the node. The node names the claims (leases) the process takes on a
shared database, so that once the process has ended without freeing them (killed alone, say)
the node frees them: its restart, or another node, sends those deliveries at once rather than
when the leases run out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.engine import Engine

from alarmhub import files, logs, metrics, secret_key
from alarmhub.core import notifications
from alarmhub.node import spawner
from alarmhub.outbound.delivery import DeliveryWorker, Recorder, claimant
from alarmhub.outbound.notify import NotifyWorker
from alarmhub.outbound.webhooks import STOP_SECONDS, WebhookWorker
from alarmhub.outbound.writer_records import WriterRecords
from alarmhub.settings import Settings, station_zone
from alarmhub.store import framing, lanes, schema, watchdog
from alarmhub.store.engine import open_engine, read_in_thread, write_transaction

log = logging.getLogger("alarmhub.delivery")
START_SECONDS = 30.0
END_SECONDS = STOP_SECONDS + 5
"""How long the process may take to end once its channel to the node has closed: the node kills
it after that (a clean stop), and it exits by itself after that when the node is dead (killed
outright: nobody is left to kill it), whatever it was waiting for (a worker's stop, a thread
in a statement to a server that no longer answers). What it had not freed or recorded, the
node or another node frees (its claims) and sends again (at least once)."""
RESTART_SECONDS = 1.0
WATCH_SECONDS = 1.0
NICENESS = 19
"""The process's CPU priority below the node's (``nice``): when the machine's cores are all busy
(a storm of notifications beside a storm of signals), the signal path runs first and messages
wait; on an idle machine it changes nothing. The lowest when the node's writer records what it
sent (SQLite): it then holds no lock the signal path waits for ..."""
NICENESS_CLAIMING = 5
"""... and above that on a shared database, where its own transactions record and claim lanes
whose rows the writer's routing (feeding those lanes) may wait for: a holder that gets no core
would hold the writer up (with SQLite's one write lock, before the writer recorded outcomes,
the lowest priority made the signal path no faster: bench/README.md)."""
_ANY_WEBHOOK = (
    select(schema.webhook.c.webhook_id).where(schema.webhook.c.removed_us.is_(None)).limit(1)
)
_ANY_GATEWAY = select(schema.notify_gateway.c.channel).limit(1)
_ANY_QUEUED = (
    select(schema.notification.c.notification_id)
    .where(schema.notification.c.state == notifications.QUEUED)
    .limit(1)
)


def anything_to_deliver(conn: Connection) -> bool:
    """Whether the station has a webhook (not removed), a notification gateway or a message
    queued (it waits for a gateway: its error is recorded)."""
    return any(conn.execute(q).first() is not None
               for q in (_ANY_WEBHOOK, _ANY_GATEWAY, _ANY_QUEUED))  # fmt: skip


def workers(
    engine: Engine,
    data_dir: Path,
    timezone: str,
    node: str | None = None,
    allow_private: bool = False,
    recorder: Recorder | None = None,
) -> list[DeliveryWorker[Any, Any]]:
    """Every channel's worker, on ``engine`` (the station's key from ``data_dir``; the
    station's ``timezone`` setting for the times of a digest); ``node``: the name they claim
    lanes under (each its own when not given); ``allow_private``: the setting
    ``webhook_allow_private``; ``recorder``: who records their outcomes on SQLite (the node's
    writer; on a shared database each worker records its own, with its claims)."""
    key = secret_key.load(data_dir)
    running: list[DeliveryWorker[Any, Any]] = [
        WebhookWorker(engine, key, allow_private=allow_private, recorder=recorder),
        NotifyWorker(engine, key, station_zone(timezone), recorder=recorder),
    ]
    if node is not None:
        for worker in running:
            worker.node = node  # each channel's lanes are its own: one name serves both
    return running


class DeliveryProcess:
    """The workers' process, seen from the node: :meth:`start` and :meth:`stop` as a
    :class:`~alarmhub.outbound.delivery.DeliveryWorker`'s."""

    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        metrics_dir: Path | None = None,
        writer: str | None = None,
    ) -> None:
        """``metrics_dir``: where the node's processes keep their metrics (several workers):
        the process's counters join them; ``writer``: the address the node's writer listens at,
        which records the outcomes on SQLite."""
        self._engine = engine
        self._config = {
            "url": settings.database,
            "data_dir": str(settings.data_dir),
            "log_level": settings.log_level,
            "log_format": settings.log_format,
            "timezone": settings.timezone,
            "webhook_allow_private": settings.webhook_allow_private,
            "answer_seconds": watchdog.stuck_seconds(settings.store_commit_timeout),
            "writer": writer if engine.dialect.name == "sqlite" else None,
        }
        self._env = None
        if metrics_dir is not None:
            self._env = {**os.environ, metrics.MULTIPROCESS_DIR: str(metrics_dir)}
        self._process: spawner.ChildProcess | None = None
        self._sock: socket.socket | None = None
        self._claimant = ""  # the name the running process claims lanes under
        self._watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if await self._wanted():
            await self._spawn()
        self._watch = asyncio.create_task(self._watching(), name="delivery process")

    async def _wanted(self) -> bool:
        """Whether the station has anything to deliver (:func:`anything_to_deliver`)."""
        return await read_in_thread(self._engine, anything_to_deliver)

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await self._end()

    async def _spawn(self) -> None:
        self._claimant = claimant()
        ours, theirs = socket.socketpair()
        try:
            process = await spawner.start_child(
                "alarmhub.outbound.delivery_process",
                [str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=self._env,
            )
        finally:
            theirs.close()
        self._process, self._sock = process, ours
        ours.setblocking(False)
        loop = asyncio.get_running_loop()
        config = {**self._config, "claimant": self._claimant}
        await loop.sock_sendall(ours, framing.encode(config))
        try:
            async with asyncio.timeout(START_SECONDS):
                ready = await loop.sock_recv(ours, 4096)
        except TimeoutError:
            ready = b""
        if not ready:
            log.error("the delivery process did not start", extra={"pid": process.pid})
            return
        log.info("delivery process started", extra={"pid": process.pid})

    async def _end(self) -> None:
        """Close the process's end: it records what ended and exits (killed if it lingers);
        then free what it still claims (it died without doing so)."""
        process, sock = self._process, self._sock
        self._process = self._sock = None
        if sock is not None:
            sock.close()
        if process is None:
            return
        try:
            await asyncio.wait_for(asyncio.to_thread(process.wait), END_SECONDS)
        except TimeoutError:
            process.kill()
            await asyncio.to_thread(process.wait)
        await self._release()

    async def _release(self) -> None:
        """Free the claims of the process that ended (a shared database; on SQLite the node
        delivering is the only one and claims nothing). Attempts it had out are made again,
        as after a lease runs out: a delivery is sent at least once."""
        if self._engine.dialect.name == "sqlite":
            return

        def release() -> None:
            with write_transaction(self._engine) as conn:
                lanes.release(conn, self._claimant)

        try:
            await asyncio.to_thread(release)
        except Exception as exc:  # the leases run out then
            log.warning("claims of the delivery process not freed", extra={"error": repr(exc)})

    async def _watching(self) -> None:
        """Start the process once there is something to deliver, and again when it ended on its
        own."""
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            if self._process is None:
                try:
                    if await self._wanted():
                        await self._spawn()
                except Exception as exc:
                    log.warning("delivery process not started", extra={"error": repr(exc)})
                continue
            if self._process.poll() is None:
                continue
            log.warning("delivery process exited; starting it again",
                        extra={"code": self._process.returncode})  # fmt: skip
            await self._end()
            await asyncio.sleep(RESTART_SECONDS)
            try:
                await self._spawn()
            except OSError as exc:
                log.error("delivery process not started", extra={"error": repr(exc)})


async def _serve(sock: socket.socket, config: dict[str, Any]) -> None:
    # deliveries can be derived again; a statement on a silent connection fails (answering);
    # on SQLite the writer records for it (``writer``): it writes itself only what ended as it
    # stops
    engine = open_engine(config["url"], synchronous=False, answer_seconds=config["answer_seconds"])
    address = config.get("writer")
    recorder = None if address is None else WriterRecords(address, config["answer_seconds"])
    running = workers(engine, Path(config["data_dir"]), config.get("timezone", ""),
                      config.get("claimant"), config.get("webhook_allow_private", False),
                      recorder)  # fmt: skip
    for worker in running:
        await worker.start()
    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    try:
        await loop.sock_sendall(sock, b"ready")
        while await loop.sock_recv(sock, 4096):
            pass  # nothing more is sent: the end of the stream means stop
    except OSError:
        pass
    finally:
        _exit_when_overdue(END_SECONDS)
        await asyncio.gather(*(worker.stop() for worker in running))
        if recorder is not None:
            await recorder.close()
        engine.dispose()


def _exit_when_overdue(seconds: float) -> None:
    """End this process ``seconds`` from now if it has not ended by then (``END_SECONDS``)."""

    def overdue() -> None:
        log.error("delivery process end overdue; exiting", extra={"seconds": seconds})
        os._exit(1)

    timer = threading.Timer(seconds, overdue)
    timer.daemon = True
    timer.start()


def _configuration(sock: socket.socket) -> dict[str, Any] | None:
    buffer = bytearray()
    while not (messages := framing.decode_all(buffer)):
        data = sock.recv(4096)
        if not data:
            return None
        buffer += data
    config: dict[str, Any] = messages[0]
    return config


def main() -> None:
    files.restrict_umask()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sock = socket.socket(fileno=int(sys.argv[1]))
    config = _configuration(sock)
    if config is None:
        return
    with contextlib.suppress(OSError):
        os.nice(NICENESS if config.get("writer") else NICENESS_CLAIMING)
    logs.configure(config["log_level"], config["log_format"])
    try:
        asyncio.run(_serve(sock, config))
    except Exception:
        log.exception("delivery process failed")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
