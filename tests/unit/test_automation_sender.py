"""The automation output's sender against a stand-in automation over real sockets (and a serial
line): the bytes and their order, one frame in flight, the resends, the backup address, the link
test, an outage, bounded reads. The store is an in-memory double of the functions the sender
calls (the store itself has its own tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from alarmhub.core.outputs import TRIES_PER_ADDRESS
from alarmhub.outbound import automation
from alarmhub.outbound.automation_lines import WRITE_BUFFER_MAX, LineDown, Peer
from alarmhub.receivers.frames import ACK as ACK_BYTES
from alarmhub.receivers.frames import NAK as NAK_BYTES
from tests.support.automation_sim import ACK, NAK, SILENT, AutomationSim
from tests.support.output_store_double import (
    FakeStore,
    eventually,
    frames,
    run,
    running,
    sender_for,
    settings,
    sim_at,
)
from tests.support.processes import free_port
from tests.support.pty_pair import pty_pair

# the bytes, their order, one at a time ---------------------------------------------------------


def test_frames_go_as_queued_byte_for_byte_each_deleted_before_the_next_is_sent() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            output = settings(sim.address)
            store = FakeStore(output)
            sent = frames(6)
            for frame in sent:
                store.enqueue(1, frame)
            delivered_before: list[int] = []
            sim.on_frame = lambda _: delivered_before.append(len(store.delivered_ids))
            async with running(sender_for(output, store)) as sender:
                await eventually(lambda: len(store.delivered_ids) == len(sent))
                assert sim.frames == sent
                assert sim.frames[0] == b"5011 181234E13001001\x14"
                assert delivered_before == list(range(len(sent)))
                assert store.delivered_ids == [1, 2, 3, 4, 5, 6]
                assert (sender.sent, sender.resent, sender.acks) == (6, 0, 6)
                assert sender.state == "up"
                assert sender.failing_since_us is None

    run(scenario)


def test_never_two_frames_unanswered_while_the_automation_takes_its_time() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            sim.delay = 0.2
            output = settings(sim.address)
            store = FakeStore(output)
            sent = frames(8)
            for frame in sent:
                store.enqueue(1, frame)
            async with running(sender_for(output, store)):
                await eventually(lambda: len(store.delivered_ids) == len(sent))
            assert sim.frames == sent
            assert sim.overlaps == 0

    run(scenario)


# resends ------------------------------------------------------------------------------------


def test_a_nak_sends_the_same_frame_again() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            sim.script.extend([NAK, NAK])
            output = settings(sim.address)
            store = FakeStore(output)
            first, second = frames(2)
            store.enqueue(1, first)
            store.enqueue(1, second)
            async with running(sender_for(output, store)) as sender:
                await eventually(lambda: len(store.delivered_ids) == 2)
                assert sim.frames == [first, first, first, second]
                assert [r.answer for r in sim.received] == [NAK, NAK, ACK, ACK]
                assert (sender.sent, sender.resent, sender.naks, sender.acks) == (2, 2, 2, 2)

    run(scenario)


def test_silence_sends_the_same_frame_again_after_the_ack_timeout_and_sets_failing() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            sim.mode = SILENT
            output = settings(sim.address, ack_timeout_seconds=0.3)
            store = FakeStore(output)
            first, second = frames(2)
            store.enqueue(1, first)
            store.enqueue(1, second)
            async with running(sender_for(output, store)) as sender:
                await sim.frames_count(3)
                assert sender.failing_since_us is not None
                assert sender.state == "down"
                sim.mode = ACK
                await eventually(lambda: len(store.delivered_ids) == 2)
                assert second not in sim.frames[:-1]  # never sent before the first's ACK
                assert set(sim.frames[:-1]) == {first}
                assert sim.frames[-1] == second
                assert sender.timeouts >= 2
                assert sender.failing_since_us is None
                assert sender.state == "up"

    run(scenario)


@pytest.mark.parametrize("refusal", [NAK, SILENT])
def test_after_the_fourth_try_the_backup_address_gets_the_frame(refusal: str) -> None:
    async def scenario() -> None:
        async with sim_at() as primary, sim_at() as backup:
            primary.mode = refusal
            output = settings(primary.address, backup.address, ack_timeout_seconds=0.3)
            store = FakeStore(output)
            first, second = frames(2)
            store.enqueue(1, first)
            store.enqueue(1, second)
            async with running(sender_for(output, store)) as sender:
                await eventually(lambda: len(store.delivered_ids) == 2)
                assert primary.frames == [first] * TRIES_PER_ADDRESS
                assert backup.frames == [first, second]
                assert sender.line.address == backup.address
                assert sender.resent == TRIES_PER_ADDRESS

    run(scenario)


def test_a_primary_that_refuses_connections_sends_to_the_backup() -> None:
    async def scenario() -> None:
        async with sim_at() as backup:
            output = settings(f"127.0.0.1:{free_port()}", backup.address)
            store = FakeStore(output)
            sent = frames(3)
            for frame in sent:
                store.enqueue(1, frame)
            async with running(sender_for(output, store)):
                await eventually(lambda: len(store.delivered_ids) == 3)
            assert backup.frames == sent

    run(scenario)


def test_addresses_that_all_refuse_are_each_logged_once_until_a_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        port = free_port()
        output = settings(f"127.0.0.1:{free_port()}", f"127.0.0.1:{port}")
        store = FakeStore(output)
        store.enqueue(1, frames(1)[0])
        sender = sender_for(output, store)
        opens = 0
        line_open = sender.line.open

        async def counted() -> Peer:
            nonlocal opens
            opens += 1
            return await line_open()

        sender.line.open = counted  # type: ignore[method-assign]
        async with running(sender):
            await eventually(lambda: opens >= 3 * len(output.addresses))  # three rounds
            refused = [r for r in caplog.records if r.getMessage().startswith("cannot connect")]
            assert len(refused) == 2  # each address once
            async with sim_at(port):  # the backup comes
                await eventually(lambda: store.delivered_ids == [1])

    with caplog.at_level("WARNING", logger="alarmhub.outputs"):
        run(scenario)


# the link test ---------------------------------------------------------------------------------


def test_an_idle_output_sends_the_link_test_and_its_ack_queues_nothing() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            output = settings(sim.address, heartbeat_seconds=1)
            store = FakeStore(output)
            async with running(sender_for(output, store)) as sender:
                await sim.frames_count(2)
                assert sim.frames[:2] == [b"1011           @    \x14"] * 2
                assert sender.state == "up"
                assert (sender.sent, store.delivered_ids) == (0, [])
                frame = frames(1)[0]
                store.enqueue(1, frame)
                await eventually(lambda: store.delivered_ids == [1])
                assert frame in sim.frames

    run(scenario)


def test_a_woken_idle_output_sends_what_was_queued_without_waiting_for_its_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(automation, "QUEUE_POLL_SECONDS", 3600.0)  # only the wake reads now

    async def scenario() -> None:
        async with sim_at() as sim:
            output = settings(sim.address, heartbeat_seconds=3600)
            store = FakeStore(output)
            async with running(sender_for(output, store)) as sender:
                await eventually(lambda: sender.state == "up")  # its link test ACKed: idle
                frame = frames(1)[0]
                store.enqueue(1, frame)
                sender.wake()
                await eventually(lambda: store.delivered_ids == [1])
                assert sim.frames == [output.link_test(), frame]

    run(scenario)


def test_an_unanswered_link_test_is_tried_again_and_marks_the_output_failing() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            sim.mode = NAK
            output = settings(sim.address, heartbeat_seconds=30)
            store = FakeStore(output)
            async with running(sender_for(output, store)) as sender:
                await sim.frames_count(2)
                assert set(sim.frames) == {output.link_test()}
                assert sender.failing_since_us is not None

    run(scenario)


# an outage ---------------------------------------------------------------------------------


def test_frames_queued_while_the_automation_is_down_all_arrive_in_order() -> None:
    async def scenario() -> None:
        sim = AutomationSim()
        await sim.start()
        output = settings(sim.address, ack_timeout_seconds=0.5)
        store = FakeStore(output)
        sent = frames(30)
        for frame in sent[:10]:
            store.enqueue(1, frame)
        async with running(sender_for(output, store)) as sender:
            await eventually(lambda: len(store.delivered_ids) >= 5)
            await sim.stop()
            for frame in sent[10:20]:
                store.enqueue(1, frame)
            await eventually(lambda: sender.failing_since_us is not None)
            await sim.start()  # the same port
            for frame in sent[20:]:
                store.enqueue(1, frame)
            await eventually(lambda: len(store.delivered_ids) == 30)
            await sim.stop()
        assert store.delivered_ids == list(range(1, 31))
        collapsed = [f for i, f in enumerate(sim.frames) if i == 0 or f != sim.frames[i - 1]]
        assert collapsed == sent  # a frame twice only when it was the one in flight
        assert sim.connections >= 2

    run(scenario)


# transports --------------------------------------------------------------------------------


def test_the_serial_transport_over_a_pty_pair(tmp_path: Path) -> None:
    async def scenario(ours: Path, theirs: Path) -> None:
        sim = AutomationSim()
        await sim.attach_serial(str(theirs))
        sim.script.append(NAK)
        output = settings(str(ours), transport="serial", baud=9600, framing="8N1")
        store = FakeStore(output)
        sent = frames(4)
        for frame in sent:
            store.enqueue(1, frame)
        async with running(sender_for(output, store)):
            await eventually(lambda: len(store.delivered_ids) == 4)
        assert sim.frames == [sent[0], *sent]
        for connection in sim.inputs:
            assert connection.transport is not None
            connection.transport.close()

    with pty_pair(tmp_path) as (ours, theirs):
        run(lambda: scenario(ours, theirs))


def test_a_listen_output_takes_one_connection_and_a_new_one_replaces_the_old() -> None:
    async def scenario() -> None:
        port = free_port()
        output = settings(f"127.0.0.1:{port}", transport="listen", heartbeat_seconds=0)
        store = FakeStore(output)
        first, second = frames(2)
        store.enqueue(1, first)
        async with running(sender_for(output, store)):
            old_reader, old_writer = await connect_when_listening(port)
            assert await old_reader.readexactly(len(first)) == first
            new_reader, new_writer = await asyncio.open_connection("127.0.0.1", port)
            assert await old_reader.read() == b""  # closed by alarmhub
            assert await new_reader.readexactly(len(first)) == first  # unanswered: again
            new_writer.write(ACK_BYTES)
            await eventually(lambda: store.delivered_ids == [1])
            store.enqueue(1, second)
            assert await new_reader.readexactly(len(second)) == second
            new_writer.write(ACK_BYTES)
            await eventually(lambda: store.delivered_ids == [1, 2])
            for writer in (old_writer, new_writer):
                writer.close()

    run(scenario)


async def connect_when_listening(
    port: int,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    for _ in range(1000):
        try:
            return await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.01)
    raise AssertionError(f"nothing listens on {port}")


# bounded reads ---------------------------------------------------------------------------------


def test_only_ack_and_nak_count_and_nothing_else_is_held() -> None:
    async def scenario() -> None:
        peer = Peer()
        peer._waiter = asyncio.get_running_loop().create_future()  # as send() leaves it
        peer.data_received(b"\x00\x00\x00\x05" + b"x" * 10 + ACK_BYTES + b"y" + NAK_BYTES)
        assert await peer.answer(1.0) == ACK_BYTES
        assert (peer.ignored, peer.stray) == (15, 1)
        assert not any(isinstance(v, bytes | bytearray) for v in vars(peer).values())

    run(scenario)


def test_a_mebibyte_of_noise_from_the_automation_is_counted_and_frames_still_go() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            output = settings(sim.address)
            store = FakeStore(output)
            first, second = frames(2)
            store.enqueue(1, first)
            async with running(sender_for(output, store)) as sender:
                await eventually(lambda: store.delivered_ids == [1])
                noise = b"\x01\x14ABC" * (1 << 18)
                sim.push(noise)
                peer = sender.peer
                assert peer is not None
                await eventually(lambda: peer.ignored == len(noise))
                store.enqueue(1, second)
                await eventually(lambda: store.delivered_ids == [1, 2])
                assert sim.frames == [first, second]

    run(scenario)


# output test -----------------------------------------------------------------------------------


class _StuckTransport(asyncio.WriteTransport):
    """A transport whose peer has taken nothing of what was written."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def get_write_buffer_size(self) -> int:
        return WRITE_BUFFER_MAX + 1

    def write(self, data: bytes | bytearray | memoryview) -> None:
        raise AssertionError("nothing more is written")

    def close(self) -> None:
        self.closed = True


def test_a_peer_that_takes_nothing_is_dropped_not_written_to_without_end() -> None:
    async def scenario() -> None:
        peer = Peer()
        transport = _StuckTransport()
        peer.connection_made(transport)
        with pytest.raises(LineDown):
            peer.send(frames(1)[0])
        assert transport.closed

    run(scenario)


# a connection being opened when the sender stops -----------------------------------------------


class _Made:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_an_open_abandoned_as_the_sender_stops_is_cancelled_closed_or_kept_quiet() -> None:
    """The sender stopped while its open was failing (or about to succeed): the failure is not
    left to be logged as never retrieved, with its traceback; a connection made all the same is
    closed; an open still under way is cancelled."""
    import gc

    unretrieved: list[dict[str, object]] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: unretrieved.append(ctx))

        async def refused() -> Peer:
            raise ConnectionRefusedError(111, "Connect call failed")

        failed = asyncio.ensure_future(refused())
        await asyncio.sleep(0)
        assert failed.done()
        automation._abandon(failed)  # type: ignore[arg-type]
        del failed

        made_peer = _Made()

        async def made() -> _Made:
            return made_peer

        opened = asyncio.ensure_future(made())
        await asyncio.sleep(0)
        automation._abandon(opened)  # type: ignore[arg-type]
        assert made_peer.closed

        pending = asyncio.ensure_future(asyncio.sleep(60))
        automation._abandon(pending)  # type: ignore[arg-type]
        await asyncio.sleep(0)
        assert pending.cancelled()
        gc.collect()

    run(scenario)
    gc.collect()
    assert unretrieved == []
