"""The webhook worker in a process of its own (``python -m alarmhub.outbound.webhook_process``):
sending webhooks is Python work in an event loop (HTTP, signatures, reading what may go), and in a
process apart it never holds the node's interpreter lock while the node answers signals.

The node starts it with :class:`WebhookProcess` once the station has a webhook (a node without
one runs no such process), hands it its settings over a socket pair (never on the command line,
where other users of the machine could read them), starts it again if it dies, and stops it by
closing its end: the process then records what ended and exits. A node killed outright closes
that end too. SIGINT and SIGTERM are left to the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub import files, logs, secret_key
from alarmhub.outbound.webhooks import STOP_SECONDS, WebhookWorker
from alarmhub.settings import Settings
from alarmhub.store import framing, schema
from alarmhub.store.engine import open_engine, read_in_thread

log = logging.getLogger("alarmhub.webhooks")
START_SECONDS = 30.0
RESTART_SECONDS = 1.0
WATCH_SECONDS = 1.0
_ANY_WEBHOOK = (
    select(schema.webhook.c.webhook_id).where(schema.webhook.c.removed_us.is_(None)).limit(1)
)


class WebhookProcess:
    """The worker's process, seen from the node: :meth:`start` and :meth:`stop` as
    :class:`~alarmhub.outbound.webhooks.WebhookWorker`'s."""

    def __init__(self, settings: Settings, engine: Engine) -> None:
        self._engine = engine
        self._config = {
            "url": settings.database,
            "data_dir": str(settings.data_dir),
            "log_level": settings.log_level,
            "log_format": settings.log_format,
        }
        self._process: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if await self._wanted():
            await self._spawn()
        self._watch = asyncio.create_task(self._watching(), name="webhook process")

    async def _wanted(self) -> bool:
        """Whether the station has a webhook (not removed)."""
        found = await read_in_thread(self._engine, lambda c: c.execute(_ANY_WEBHOOK).first())
        return found is not None

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await self._end()

    async def _spawn(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "alarmhub.outbound.webhook_process", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self._process, self._sock = process, ours
        ours.setblocking(False)
        loop = asyncio.get_running_loop()
        await loop.sock_sendall(ours, framing.encode(self._config))
        try:
            async with asyncio.timeout(START_SECONDS):
                ready = await loop.sock_recv(ours, 4096)
        except TimeoutError:
            ready = b""
        if not ready:
            log.error("the webhook process did not start", extra={"pid": process.pid})
            return
        log.info("webhook process started", extra={"pid": process.pid})

    async def _end(self) -> None:
        """Close the process's end: it records what ended and exits (killed if it lingers)."""
        process, sock = self._process, self._sock
        self._process = self._sock = None
        if sock is not None:
            sock.close()
        if process is None:
            return
        try:
            await asyncio.wait_for(asyncio.to_thread(process.wait), STOP_SECONDS + 5)
        except TimeoutError:
            process.kill()
            await asyncio.to_thread(process.wait)

    async def _watching(self) -> None:
        """Start the process once there is a webhook, and again when it ended on its own."""
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            if self._process is None:
                try:
                    if await self._wanted():
                        await self._spawn()
                except Exception as exc:
                    log.warning("webhook process not started", extra={"error": repr(exc)})
                continue
            if self._process.poll() is None:
                continue
            log.warning("webhook process exited; starting it again",
                        extra={"code": self._process.returncode})  # fmt: skip
            await self._end()
            await asyncio.sleep(RESTART_SECONDS)
            try:
                await self._spawn()
            except OSError as exc:
                log.error("webhook process not started", extra={"error": repr(exc)})


async def _serve(sock: socket.socket, config: dict[str, Any]) -> None:
    engine = open_engine(config["url"], synchronous=False)  # deliveries can be derived again
    worker = WebhookWorker(engine, secret_key.load(Path(config["data_dir"])))
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
        await worker.stop()
        engine.dispose()


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
    logs.configure(config["log_level"], config["log_format"])
    try:
        asyncio.run(_serve(sock, config))
    except Exception:
        log.exception("webhook process failed")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
