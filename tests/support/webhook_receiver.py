"""A real HTTP receiver of webhooks for tests and benchmarks: a threading ``http.server`` on a
local port that records every attempt (headers, body, when), and can answer 500 to the first
attempts (of every event, or of the first events only) or to some accounts' events, hang, or be
stopped and started again on the same port (a receiver that is down)."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HANG_SECONDS = 120.0
ALLOW_PRIVATE = {"ALARMHUB_WEBHOOK_ALLOW_PRIVATE": "1"}
"""The setting under which ``webhook add`` takes a receiver on this machine (a private target)."""


@dataclass(frozen=True)
class Attempt:
    """One request the receiver took: its headers (names in lower case), body, and when it came
    (UNIX seconds) and how it was answered (0: not answered, it hung)."""

    headers: dict[str, str]
    body: bytes
    at: float
    status: int


@dataclass
class Receiver:
    """``start()``; ``url``; ``attempts``, ``delivered`` (the attempts answered 2xx)."""

    port: int = 0
    fail_first: int = 0  # answer 500 to the first this many attempts of each webhook-id ...
    fail_events: int | None = None  # ... of the first this many webhook-ids to come (None: all)
    hang: bool = False  # hold every request (until stop) instead of answering
    failing_accounts: frozenset[str] = frozenset()  # answer 500 to these accounts' events
    attempts: list[Attempt] = field(default_factory=list)
    arrived: int = 0  # requests come in (a hanging one is in ``attempts`` only once it ends)
    _server: ThreadingHTTPServer | None = None
    _release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _came: list[str] = field(default_factory=list)  # the webhook-ids, in the order they came

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    @property
    def delivered(self) -> list[Attempt]:
        with self._lock:
            return [a for a in self.attempts if 200 <= a.status < 300]

    def delivered_ids(self) -> list[str]:
        return [a.headers["webhook-id"] for a in self.delivered]

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver._lock:
                    receiver.arrived += 1
                status = receiver._answer(headers.get("webhook-id", ""), body)
                with receiver._lock:
                    receiver.attempts.append(Attempt(headers, body, time.time(), status))
                if status == 0:
                    return
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._release.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True, name="receiver").start()
        return self

    def _answer(self, webhook_id: str, body: bytes) -> int:
        if self.hang:
            self._release.wait(HANG_SECONDS)
            return 0
        if self.failing_accounts and account_of(body) in self.failing_accounts:
            return 500
        with self._lock:
            earlier = sum(1 for a in self.attempts if a.headers.get("webhook-id") == webhook_id)
            if webhook_id not in self._came:
                self._came.append(webhook_id)
            failing = self.fail_events is None or self._came.index(webhook_id) < self.fail_events
        return 500 if failing and earlier < self.fail_first else 204

    def stop(self) -> None:
        """Stop listening (the port is refused until ``start`` again); hanging requests end."""
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def account_of(body: bytes) -> str:
    """The account an event's body is about ('' if none)."""
    return str(json.loads(body).get("data", {}).get("account", ""))


def closed_port() -> int:
    """A local port nothing listens on (for a receiver that is down from the start)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
