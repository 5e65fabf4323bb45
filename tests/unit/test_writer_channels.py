"""The writer's channels (store/writer_channels.py): workers connect to its Unix socket, a group
commit holding the frames of several workers answers each worker for its own frames, the lead
is any channel's, a worker that goes away leaves the others alone, a notice reaches the node's
processes that read answers (not the delivery process), and a reply (to the delivery process's
request) goes to its channel alone."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alarmhub.store import framing
from alarmhub.store.writer_channels import Channels


def receive(sock: socket.socket) -> Any:
    buffer = bytearray()
    sock.settimeout(5)
    while not (messages := framing.decode_all(buffer)):
        data = sock.recv(65536)
        assert data, "the writer closed the channel"
        buffer += data
    [message] = messages
    return message


@pytest.fixture
def channels(tmp_path: Path) -> Iterator[tuple[Channels, socket.socket, str]]:
    parent, control = socket.socketpair()
    path = str(tmp_path / "writer.sock")
    writer = Channels(control, bytearray(), leader=False, parent_reads=False)  # of workers
    writer.listen(path)
    yield writer, parent, path
    writer.close()
    parent.close()
    control.close()


def two_workers(writer: Channels, path: str) -> tuple[socket.socket, socket.socket]:
    """Two workers connected to ``writer`` at ``path``, accepted and greeted."""
    first, second = connect(path), connect(path)
    writer.read(0.5)  # accepts them both
    writer.read(0.1)
    for worker in (first, second):
        assert receive(worker) == {"ready": True}
    return first, second


def connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock


def read_frames(writer: Channels, expected: int) -> list[tuple[Any, Any]]:
    """Read until ``expected`` messages came in (each arriving frame recorded as a commit's)."""
    got: list[tuple[Any, Any]] = []
    for _ in range(50):
        is_open, messages = writer.read(0.1)
        assert is_open
        for channel, message in messages:
            if isinstance(message, list):
                writer.arrived(channel, len(message))
            got.append((channel, message))
        if len(got) >= expected:
            return got
    raise AssertionError(f"only {len(got)} of {expected} messages arrived")


def test_each_worker_is_answered_for_its_own_frames(
    channels: tuple[Channels, socket.socket, str],
) -> None:
    writer, _, path = channels
    first, second = two_workers(writer, path)
    first.sendall(framing.encode(["a1", "a2"]))
    read_frames(writer, 1)
    second.sendall(framing.encode(["b1"]))
    read_frames(writer, 1)
    first.sendall(framing.encode(["a3"]))
    read_frames(writer, 1)
    # one commit of the three frames: outcomes in the order the frames came
    reply = {"frames": 3, "stored": [[1], [2], [3], [4]], "seconds": 0.5, "unavailable": True}
    assert writer.answer(reply)
    # whether the database could not commit at all: each worker is told
    assert receive(first) == {
        "frames": 2, "stored": [[1], [2], [4]], "seconds": 0.5, "unavailable": True
    }  # fmt: skip
    assert receive(second) == {"frames": 1, "stored": [[3]], "seconds": 0.5, "unavailable": True}
    first.close()
    second.close()


def test_the_lead_is_any_channels_and_ends_with_it(
    channels: tuple[Channels, socket.socket, str],
) -> None:
    writer, _, path = channels
    worker = connect(path)
    writer.read(0.5)
    assert receive(worker) == {"ready": True}
    assert not writer.leader
    worker.sendall(framing.encode({"leader": True}))
    [(channel, message)] = read_frames(writer, 1)
    channel.leader = bool(message["leader"])
    assert writer.leader
    worker.close()  # that worker died: its lead with it
    for _ in range(10):
        writer.read(0.1)
    assert not writer.leader


def test_a_gone_worker_leaves_the_others_answered(
    channels: tuple[Channels, socket.socket, str],
) -> None:
    writer, parent, path = channels
    gone, staying = two_workers(writer, path)
    gone.sendall(framing.encode(["g1"]))
    read_frames(writer, 1)
    staying.sendall(framing.encode(["s1"]))
    read_frames(writer, 1)
    gone.close()
    writer.read(0.1)  # sees it closed; its frame is still committed, its answer dropped
    assert writer.answer({"frames": 2, "stored": [[1], [2]], "seconds": 0.1})
    assert receive(staying) == {
        "frames": 1, "stored": [[2]], "seconds": 0.1, "unavailable": False
    }  # fmt: skip
    parent.close()
    is_open, _ = writer.read(0.1)
    assert not is_open, "the parent's end closed: stop"
    staying.close()


def test_a_notice_goes_to_every_worker_and_not_to_a_parent_of_workers(
    channels: tuple[Channels, socket.socket, str],
) -> None:
    writer, parent, path = channels
    first, second = two_workers(writer, path)
    assert writer.tell(framing.QUEUED_NOTICE)
    for worker in (first, second):
        assert receive(worker) == {framing.QUEUED: True}
    parent.setblocking(False)
    with pytest.raises(BlockingIOError):  # the parent of workers reads nothing after the start
        parent.recv(65536)
    first.close()
    second.close()


def test_a_notice_goes_to_the_parent_when_it_is_the_node(tmp_path: Path) -> None:
    parent, control = socket.socketpair()
    writer = Channels(control, bytearray())
    writer.listen(str(tmp_path / "writer.sock"))  # for the node's delivery process
    deliveries = connect(str(tmp_path / "writer.sock"))
    try:
        writer.read(0.5)
        assert receive(deliveries) == {"ready": True}
        assert writer.tell(framing.QUEUED_NOTICE)
        assert receive(parent) == {framing.QUEUED: True}
        deliveries.setblocking(False)
        with pytest.raises(BlockingIOError):  # not for the delivery process
            deliveries.recv(65536)
        parent.close()
        assert not writer.tell(framing.QUEUED_NOTICE), "the node is gone"
    finally:
        deliveries.close()
        writer.close()
        control.close()


def test_a_reply_goes_to_its_channel_alone_and_a_gone_one_is_dropped(
    channels: tuple[Channels, socket.socket, str],
) -> None:
    writer, _, path = channels
    first, second = two_workers(writer, path)
    first.sendall(framing.encode({framing.RECORD: "webhook", "id": 1}))
    [(origin, message)] = writer.read(0.5)[1]
    assert message[framing.RECORD] == "webhook"
    writer.reply(origin, framing.encode({framing.RECORDED: 1}))
    assert receive(first) == {framing.RECORDED: 1}
    second.setblocking(False)
    with pytest.raises(BlockingIOError):
        second.recv(65536)
    first.close()
    writer.read(0.5)  # its end closed: dropped
    writer.reply(origin, framing.encode({framing.RECORDED: 2}))  # nothing to send it to
    assert writer.tell(framing.QUEUED_NOTICE)
    second.setblocking(True)
    assert receive(second) == {framing.QUEUED: True}
    second.close()
