"""A reader of the integrator API's event stream (``GET /api/v1/events``) for tests: it reads in
a thread of its own, keeps every event (and ``gap``) it got, and disconnects on demand, as a
client that goes away does."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from tests.support.processes import wait_for


@dataclass(frozen=True)
class Received:
    """One server-sent event: its ``id`` ('' when it has none), ``event`` and ``data``."""

    id: str
    kind: str
    data: Any


class EventReader:
    """``with EventReader(url, key, last_event_id) as reader:`` connected until the block ends;
    ``reader.events`` (every event with an id, in order) and ``reader.gaps``. ``address`` is
    the local address it connects from (a loopback one: another client)."""

    def __init__(
        self, url: str, key: str, last_event_id: str | None = None, address: str | None = None
    ) -> None:
        self.url = url
        self.address = address
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
        if last_event_id is not None:
            self.headers["Last-Event-ID"] = last_event_id
        self.status = 0
        self.refusal: httpx.Response | None = None
        self.ended = False
        self._received: list[Received] = []
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._socket: socket.socket | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> EventReader:
        self.open()
        assert self.status == 200, f"the event stream answered {self.status}"
        return self

    def open(self) -> int:
        """Connect; the answer's status (a refusal's answer is ``refusal``)."""
        self._thread.start()
        assert self._connected.wait(30), "the event stream never answered"
        return self.status

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.disconnect()

    def disconnect(self) -> None:
        if self._socket is not None and not self.ended:
            with contextlib.suppress(OSError):  # already closed by the server
                self._socket.shutdown(socket.SHUT_RDWR)
        self._thread.join(30)

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    @property
    def events(self) -> list[Received]:
        return [r for r in self.received if r.id]

    @property
    def gaps(self) -> list[Received]:
        return [r for r in self.received if r.kind == "gap"]

    def wait_for(self, count: int, what: str = "events") -> list[Received]:
        """The events once there are at least ``count`` of them."""
        return wait_for(lambda: len(self.events) >= count and self.events, what, 30)

    def _read(self) -> None:
        timeout = httpx.Timeout(10, read=None)
        transport = httpx.HTTPTransport(local_address=self.address)
        try:
            with (
                httpx.Client(base_url=self.url, timeout=timeout, transport=transport) as client,
                client.stream("GET", "/api/v1/events", headers=self.headers) as answer,
            ):
                self.status = answer.status_code
                stream = answer.extensions.get("network_stream")
                if stream is not None:
                    self._socket = stream.get_extra_info("socket")
                if answer.status_code != 200:
                    answer.read()
                    self.refusal = answer
                self._connected.set()
                if answer.status_code == 200:
                    self._parse(answer.iter_lines())
        except httpx.HTTPError:
            pass  # disconnected
        finally:
            self.ended = True
            self._connected.set()

    def _parse(self, lines: Any) -> None:
        fields: dict[str, str] = {}
        for line in lines:
            if not line:
                if "data" in fields:
                    event = Received(
                        fields.get("id", ""),
                        fields.get("event", "message"),
                        json.loads(fields["data"]),
                    )
                    with self._lock:
                        self._received.append(event)
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
