"""The writer process's channels: its parent's socket and one socket for each other process of
the node that connects, accepted on a Unix socket of the node's: its workers, when it runs
several, and its delivery process (which hands over outcomes to record, ``store.recording``).

The parent's channel carries the configuration (and, with one process, every frame); its end
closing means stop. Each frame is answered on the channel it came in on: a group commit may hold
the frames of several workers, and each gets its part. A worker's channel closing drops its
frames' answers (what is committed stays committed); the writer goes on with the others.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
from collections import deque
from pathlib import Path
from typing import Any

from alarmhub import files
from alarmhub.store import framing

READ_SIZE = 1 << 20
SEND_SECONDS = 10.0
"""A worker that does not read its answers for this long is cut off (the others go on)."""
BACKLOG = 64


def read_available(sock: socket.socket, buffer: bytearray) -> bool:
    """Take whatever bytes are there without waiting (the socket stays as it is, so that sends
    still wait for room); False on EOF or a broken socket."""
    try:
        data = sock.recv(READ_SIZE, socket.MSG_DONTWAIT)
        if not data:
            return False
        buffer += data
        while data := sock.recv(READ_SIZE, socket.MSG_DONTWAIT):
            buffer += data
    except (BlockingIOError, InterruptedError):
        pass
    except OSError:
        return False
    return True


def send_all(sock: socket.socket, data: bytes, timeout: float) -> None:
    """Send all of ``data``, waiting at most ``timeout`` seconds each time there is no room
    (TimeoutError then); the socket's own mode is left as it is."""
    view = memoryview(data)
    while view:
        try:
            view = view[sock.send(view, socket.MSG_DONTWAIT) :]
        except (BlockingIOError, InterruptedError):
            _, writable, _ = select.select([], [sock], [], timeout)
            if not writable:
                raise TimeoutError("the peer does not read") from None


def wait_readable(sock: socket.socket, timeout: float | None) -> bool:
    """Wait up to ``timeout`` seconds (None: for ever) for ``sock`` to be readable."""
    readable, _, _ = select.select([sock], [], [], timeout)
    return bool(readable)


class Channel:
    """One peer of the writer: its socket, the bytes not yet a whole frame, and whether it says
    its node leads supervision."""

    __slots__ = ("buffer", "leader", "open", "sock")

    def __init__(self, sock: socket.socket, buffer: bytearray, leader: bool = False) -> None:
        self.sock = sock
        self.buffer = buffer
        self.leader = leader
        self.open = True


class Channels:
    """The parent's channel, the workers' channels and the listening socket they come by;
    which channel each frame waiting for a commit came from, in order."""

    def __init__(
        self,
        control: socket.socket,
        buffer: bytearray,
        leader: bool = True,
        parent_reads: bool = True,
    ) -> None:
        """``parent_reads``: whether the parent reads the writer's notices (a node of one
        process), or the workers that connect do (the parent of a node of several)."""
        self.control = Channel(control, buffer, leader)
        self._parent_reads = parent_reads
        self._workers: list[Channel] = []
        self._listener: socket.socket | None = None
        self._path: Path | None = None
        self._origins: deque[tuple[Channel, int]] = deque()

    def listen(self, path: str) -> None:
        """Take the workers' connections on a Unix socket at ``path`` (mode 0600; a socket a
        dead writer left there is replaced)."""
        target = Path(path)
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        os.chmod(path, files.FILE_MODE)
        listener.listen(BACKLOG)
        listener.setblocking(False)
        self._listener, self._path = listener, target

    @property
    def leader(self) -> bool:
        """Whether the node leads supervision: as its parent said, or as any worker says."""
        return self.control.leader or any(w.leader for w in self._workers)

    def read(self, timeout: float | None) -> tuple[bool, list[tuple[Channel, Any]]]:
        """Wait up to ``timeout`` seconds (None: for ever) for any channel, take in new workers
        and whatever is there; whether the parent's channel is still open, and every whole
        frame, with the channel it came on."""
        socks = [self.control.sock, *(w.sock for w in self._workers)]
        if self._listener is not None:
            socks.append(self._listener)
        readable, _, _ = select.select(socks, [], [], timeout)
        if readable:
            if self.control.sock in readable:
                self.control.open = self._drain(self.control)
            for worker in list(self._workers):
                if worker.sock in readable and not self._drain(worker):
                    self._close(worker)
            if self._listener is not None and self._listener in readable:
                self._accept()
        messages = [
            (channel, message)
            for channel in (self.control, *self._workers)
            for message in framing.decode_all(channel.buffer)
        ]
        return self.control.open, messages

    def _drain(self, channel: Channel) -> bool:
        return read_available(channel.sock, channel.buffer)

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            sock.setblocking(True)
            worker = Channel(sock, bytearray())
            try:
                send_all(sock, framing.encode({"ready": True}), SEND_SECONDS)
            except OSError:
                sock.close()
                continue
            self._workers.append(worker)

    def _close(self, channel: Channel) -> None:
        channel.open = False
        channel.leader = False
        if channel in self._workers:
            self._workers.remove(channel)
        channel.sock.close()

    def arrived(self, channel: Channel, rows: int) -> None:
        """A frame of ``rows`` signals from ``channel`` joined the frames waiting for a commit."""
        self._origins.append((channel, rows))

    def answer(self, reply: dict[str, Any]) -> bool:
        """Send each channel the answers to its frames among the ``reply["frames"]`` oldest
        waiting ones (their outcomes in ``reply["stored"]``, in order); False when the parent's
        channel is gone."""
        parts: dict[Channel, dict[str, Any]] = {}
        stored = reply["stored"]
        offset = 0
        for _ in range(reply["frames"]):
            channel, rows = self._origins.popleft()
            part = parts.setdefault(channel, {"frames": 0, "stored": []})
            part["frames"] += 1
            part["stored"] += stored[offset : offset + rows]
            offset += rows
        for channel, part in parts.items():
            if not channel.open:
                continue
            part["seconds"] = reply["seconds"]
            part["unavailable"] = reply.get("unavailable", False)
            try:
                if channel is self.control:
                    channel.sock.sendall(framing.encode(part))
                else:
                    send_all(channel.sock, framing.encode(part), SEND_SECONDS)
            except OSError:
                if channel is self.control:
                    return False
                self._close(channel)
        return True

    def reply(self, channel: Channel, frame: bytes) -> None:
        """Send ``frame`` to ``channel`` alone (a worker that is gone, or does not read its
        answers, is cut off; the others go on)."""
        if not channel.open:
            return
        try:
            if channel is self.control:
                channel.sock.sendall(frame)
            else:
                send_all(channel.sock, frame, SEND_SECONDS)
        except OSError:
            if channel is not self.control:
                self._close(channel)

    def tell(self, frame: bytes) -> bool:
        """Send ``frame`` (a notice, such as ``framing.QUEUED_NOTICE``) to the node's processes
        that read the writer's answers: the parent's channel when the parent is the node, else
        every worker's (a parent of workers reads nothing after the start; the delivery process,
        which connects too, ignores them); False when the parent's channel is gone."""
        if self._parent_reads:
            try:
                self.control.sock.sendall(frame)
            except OSError:
                return False
            return True
        for worker in list(self._workers):
            try:
                send_all(worker.sock, frame, SEND_SECONDS)
            except OSError:
                self._close(worker)
        return True

    def close(self) -> None:
        """Close every worker's channel and the listening socket (the parent's stays)."""
        for worker in list(self._workers):
            self._close(worker)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._path is not None:
            with contextlib.suppress(OSError):
                self._path.unlink()
            self._path = None
