"""A simulated hardware receiver's automation output, as the receivers' manuals describe it:
frames sent one at a time and resent on NAK or silence, link tests every few seconds, over TCP
(either end) or a serial device; each frame's answer and its latency recorded."""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import serial

from alarmhub.core.surgard import link_test_frame
from alarmhub.receivers.frames import ACK as ACK_ANSWER
from alarmhub.receivers.frames import NAK as NAK_ANSWER

ACK, NAK = ACK_ANSWER[0], NAK_ANSWER[0]  # the answers' bytes
READ_CHUNK = 4096


class Channel(Protocol):
    """One end of the receiver's automation output."""

    def open(self) -> None:
        """Connect (or accept, or open the device); raises OSError when it cannot yet."""

    def send(self, data: bytes) -> None: ...

    def recv(self, timeout: float) -> bytes:
        """What arrived within ``timeout`` (b"" when nothing did); raises ConnectionError when
        the other end has gone."""

    def close(self) -> None: ...


class TcpClient:
    """The receiver (or its terminal server) connects to alarmhub's ``--listen`` address."""

    def __init__(self, host: str, port: int) -> None:
        self.address = (host, port)
        self.sock: socket.socket | None = None

    def open(self) -> None:
        self.sock = socket.create_connection(self.address, timeout=2)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, data: bytes) -> None:
        assert self.sock is not None
        self.sock.sendall(data)

    def recv(self, timeout: float) -> bytes:
        assert self.sock is not None
        self.sock.settimeout(timeout if timeout > 0 else 0.0)  # 0: what has come, no wait
        try:
            data = self.sock.recv(READ_CHUNK)
        except (TimeoutError, BlockingIOError):
            return b""
        if not data:
            raise ConnectionResetError("alarmhub closed the connection")
        return data

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class TcpServer(TcpClient):
    """The receiver listens and alarmhub connects (``--connect``); one connection at a time,
    the next accepted when it drops."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.listener = socket.create_server((host, port))
        self.listener.settimeout(0.2)
        self.port: int = self.listener.getsockname()[1]
        self.accepted = 0

    def open(self) -> None:
        try:
            self.sock, _ = self.listener.accept()
        except TimeoutError as exc:
            raise ConnectionRefusedError("no connection from alarmhub yet") from exc
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.accepted += 1

    def shut(self) -> None:
        self.close()
        self.listener.close()


class SerialPort:
    """A serial device (a pty of a socat pair in the tests) in raw mode."""

    def __init__(self, path: str, baud: int = 9600, framing: str = "8N1") -> None:
        self.path, self.baud, self.framing = path, baud, framing
        self.port: serial.Serial | None = None

    def open(self) -> None:
        bits, parity, stop = self.framing[0], self.framing[1], self.framing[2]
        self.port = serial.Serial(
            self.path,
            self.baud,
            bytesize=int(bits),
            parity=parity,
            stopbits=int(stop),
            timeout=0,
            exclusive=True,
        )

    def send(self, data: bytes) -> None:
        assert self.port is not None
        self.port.write(data)
        self.port.flush()

    def recv(self, timeout: float) -> bytes:
        assert self.port is not None
        self.port.timeout = max(timeout, 0.0)  # 0: what has come, no wait
        first = self.port.read(1)
        return first + self.port.read(self.port.in_waiting) if first else b""

    def close(self) -> None:
        if self.port is not None:
            self.port.close()
            self.port = None


@dataclass
class Delivery:
    """One frame's way: when each try went out, the NAKs, and when (if) it was ACKed."""

    frame: bytes
    link_test: bool = False
    sends: list[float] = field(default_factory=list)  # time.perf_counter() of each try
    naks: int = 0
    acked_at: float | None = None
    skipped: bool = False  # given up after the last try ("skip" policy)

    @property
    def acked(self) -> bool:
        return self.acked_at is not None

    @property
    def latency(self) -> float | None:
        """Seconds from the try that was ACKed to its ACK."""
        return None if self.acked_at is None else self.acked_at - self.sends[-1]


@dataclass
class Settings:
    """How the receiver behaves: the ACK wait (Sur-Gard 4 s; System 5 up to 9.9 s), tries
    before it flags an automation failure (MLR2: the first and 3 resends), what it does then
    ("flag": System 5's way, only link tests until one is ACKed, then the frame again, so
    nothing is lost; "skip": the D6500's way, the frame is dropped), the link test interval
    (0: none), the pause after an ACKed frame (events as they come rather than a backlog) and
    how soon it reconnects."""

    ack_wait: float = 4.0
    tries: int = 4
    after_tries: str = "flag"
    link_test_every: float = 30.0
    frame_gap: float = 0.0  # seconds after an ACKed frame before the next (0: at once)
    reconnect_every: float = 0.2
    receiver: int = 1
    line: int = 1


class ReceiverSim:
    """A receiver sending its queue of frames stop-and-wait over ``channel`` from a thread of
    its own (``start``/``stop``); ``deliveries`` records every frame and link test."""

    def __init__(self, channel: Channel, settings: Settings | None = None) -> None:
        self.channel = channel
        self.settings = settings or Settings()
        self.deliveries: list[Delivery] = []
        self.queue: deque[Delivery] = deque()
        self.flagged = False  # an automation failure: the receiver's own trouble light
        self.connections = 0
        self.stray = 0  # answer bytes that came while no frame waited for one
        self.lock = threading.Condition()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.connected = False
        self.pending_answers = bytearray()

    # --- the queue -----------------------------------------------------------------------------

    def send(self, frames: Iterable[bytes]) -> list[Delivery]:
        """Queue ``frames``; the thread sends them in order. Returns their records."""
        added = [Delivery(frame) for frame in frames]
        with self.lock:
            self.deliveries += added
            self.queue.extend(added)
            self.lock.notify_all()
        return added

    def events(self) -> list[Delivery]:
        with self.lock:
            return [d for d in self.deliveries if not d.link_test]

    def acked(self) -> list[Delivery]:
        return [d for d in self.events() if d.acked]

    def link_tests(self) -> list[Delivery]:
        with self.lock:
            return [d for d in self.deliveries if d.link_test]

    def wait_drained(self, seconds: float) -> bool:
        """Whether every queued frame was ACKed (or skipped) within ``seconds``."""
        deadline = time.monotonic() + seconds
        with self.lock:
            while self.queue:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(min(left, 0.2))
        return True

    # --- the thread ----------------------------------------------------------------------------

    def start(self) -> ReceiverSim:
        self.thread = threading.Thread(target=self._run, name="receiver-sim", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        with self.lock:
            self.lock.notify_all()
        if self.thread is not None:
            self.thread.join(timeout=30)
        self.channel.close()
        self.connected = False

    def _run(self) -> None:
        next_test = time.monotonic() + self.settings.link_test_every
        while not self.stopping.is_set():
            if not self.connected and not self._connect():
                continue
            try:
                next_test = self._step(next_test)
            except OSError:  # the other end went: reconnect; the frame is sent again
                self.channel.close()
                self.connected = False

    def _connect(self) -> bool:
        try:
            self.channel.open()
        except OSError:
            self.stopping.wait(self.settings.reconnect_every)
            return False
        self.connected = True
        self.connections += 1
        self.pending_answers.clear()
        return True

    def _step(self, next_test: float) -> float:
        every = self.settings.link_test_every
        now = time.monotonic()
        with self.lock:
            head = self.queue[0] if self.queue and not self.flagged else None
        if head is None and every and now >= next_test:
            test = Delivery(link_test_frame(self.settings.receiver, self.settings.line), True)
            with self.lock:
                self.deliveries.append(test)
            if self._exchange(test) and self.flagged:
                self.flagged = False  # the link answers again: back to the frames
            return time.monotonic() + every
        if head is None and self.flagged and not every:  # no link tests: try the frame again
            self.stopping.wait(self.settings.ack_wait)
            self.flagged = False
            return next_test
        if head is None:
            wait = (next_test - now) if every else 0.2
            with self.lock:
                if not self.queue or self.flagged:
                    self.lock.wait(min(max(wait, 0.0), 0.2))
            self._drain_stray()
            return next_test
        tries = 0
        while not self.stopping.is_set():
            tries += 1
            if self._exchange(head):
                with self.lock:
                    self.queue.popleft()
                    self.lock.notify_all()
                if self.settings.frame_gap:
                    self.stopping.wait(self.settings.frame_gap)
                return time.monotonic() + every
            if tries >= self.settings.tries:
                if self.settings.after_tries == "skip":
                    with self.lock:
                        head.skipped = True
                        self.queue.popleft()
                        self.lock.notify_all()
                else:
                    self.flagged = True
                return next_test
        return next_test

    def _exchange(self, delivery: Delivery) -> bool:
        """One try: send, wait for the answer up to the ACK wait; True on ACK."""
        self._drain_stray()
        delivery.sends.append(time.perf_counter())
        self.channel.send(delivery.frame)
        deadline = time.monotonic() + self.settings.ack_wait
        while not self.stopping.is_set():
            if self.pending_answers:
                answer = self.pending_answers.pop(0)
                if answer == ACK:
                    delivery.acked_at = time.perf_counter()
                    return True
                if answer == NAK:
                    delivery.naks += 1
                    return False
                continue  # a B32 length prefix or noise
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.pending_answers += self.channel.recv(min(left, 0.2))
        return False

    def _drain_stray(self) -> None:
        self.pending_answers += self.channel.recv(0)
        self.stray += sum(1 for b in self.pending_answers if b in (ACK, NAK))
        self.pending_answers.clear()


def pipeline(channel: Channel, frames: Sequence[bytes], seconds: float = 30.0) -> list[Delivery]:
    """Send ``frames`` back to back without waiting (no receiver does this: for hostile and
    bench use) over an open ``channel``, then read the answers, matched to the frames in order,
    until each has one or ``seconds`` pass."""
    records = [Delivery(frame) for frame in frames]
    for record in records:
        record.sends.append(time.perf_counter())
        channel.send(record.frame)
    deadline = time.monotonic() + seconds
    answered = 0
    while answered < len(records) and time.monotonic() < deadline:
        for byte in channel.recv(min(0.2, deadline - time.monotonic())):
            if byte not in (ACK, NAK) or answered >= len(records):
                continue
            record = records[answered]
            if byte == ACK:
                record.acked_at = time.perf_counter()
            else:
                record.naks += 1
            answered += 1
    return records


def latencies(deliveries: Iterable[Delivery]) -> list[float]:
    """The frame-to-ACK latencies (seconds) of the ACKed ``deliveries``, sorted."""
    return sorted(d.latency for d in deliveries if d.latency is not None)
