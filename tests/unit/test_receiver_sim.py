"""The simulated receiver of the receiver link tests (``tests.support.receiver_sim``) against a
scripted automation end: it resends on NAK and silence, flags after its tries and recovers by
link tests, speaks over a serial pty pair, and matches pipelined answers in order."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from alarmhub.core.surgard import TERMINATOR as DC4
from alarmhub.core.surgard import contact_id_frame, link_test_frame
from tests.support.pty_pair import pty_pair
from tests.support.receiver_sim import (
    ACK,
    NAK,
    ReceiverSim,
    SerialPort,
    Settings,
    TcpClient,
    pipeline,
)

FRAME = contact_id_frame(1, 1, "1234", "E130", "01", "015")
QUICK = Settings(ack_wait=0.2, tries=2, link_test_every=0.3, reconnect_every=0.05)


@contextmanager
def automation(answer: Callable[[bytes], bytes]) -> Iterator[tuple[TcpClient, list[bytes]]]:
    """A listening automation end that answers each DC4-ended frame with ``answer(frame)``;
    yields the simulator's channel to it and the frames it got."""
    got: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        buffer = b""
        with conn:
            while chunk := conn.recv(4096):
                buffer += chunk
                while DC4 in buffer:
                    frame, _, buffer = buffer.partition(DC4)
                    got.append(frame + DC4)
                    conn.sendall(answer(frame + DC4))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield TcpClient("127.0.0.1", port), got
    finally:
        listener.close()


def test_a_nak_gets_the_frame_resent_and_the_ack_ends_it() -> None:
    answers = iter([bytes([NAK]), bytes([ACK])])
    with automation(lambda frame: next(answers)) as (channel, got):
        sim = ReceiverSim(channel, QUICK).start()
        [delivery] = sim.send([FRAME])
        assert sim.wait_drained(10)
        sim.stop()
    assert got == [FRAME, FRAME]
    assert delivery.naks == 1 and len(delivery.sends) == 2 and delivery.acked
    assert delivery.latency is not None and delivery.latency >= 0


def test_silence_flags_then_link_tests_until_one_is_acked_and_the_frame_goes_again() -> None:
    silent = {"events": 2}

    def answer(frame: bytes) -> bytes:
        if frame.startswith(b"5") and silent["events"]:
            silent["events"] -= 1
            return b""
        return bytes([ACK])

    with automation(answer) as (channel, got):
        sim = ReceiverSim(channel, QUICK).start()
        [delivery] = sim.send([FRAME])
        assert sim.wait_drained(10)
        sim.stop()
    assert got[:2] == [FRAME, FRAME]  # the first try and its one resend, unanswered
    assert got[2] == link_test_frame(1, 1)  # flagged: only a link test until it is ACKed
    assert got[3] == FRAME and delivery.acked and not sim.flagged
    assert sim.link_tests()[0].acked


def test_the_skip_policy_drops_a_frame_after_its_tries() -> None:
    settings = Settings(ack_wait=0.1, tries=3, after_tries="skip", link_test_every=0)
    with automation(lambda frame: bytes([NAK])) as (channel, got):
        sim = ReceiverSim(channel, settings).start()
        [delivery] = sim.send([FRAME])
        assert sim.wait_drained(10)
        sim.stop()
    assert len(got) == 3 and delivery.skipped and delivery.naks == 3 and not delivery.acked


def test_pipelined_answers_match_the_frames_in_order() -> None:
    frames = [contact_id_frame(1, 1, "1234", "E130", "01", f"{zone:03d}") for zone in range(5)]
    answers = iter([ACK, ACK, NAK, ACK, ACK])
    with automation(lambda frame: bytes([next(answers)])) as (channel, got):
        channel.open()
        records = pipeline(channel, frames, seconds=10)
        channel.close()
    assert got == frames
    assert [r.acked for r in records] == [True, True, False, True, True]
    assert records[2].naks == 1


def test_a_serial_line_of_a_socat_pty_pair_carries_frame_and_ack(tmp_path: Path) -> None:
    with pty_pair(tmp_path) as (a, b):
        automation_end = SerialPort(str(a))
        automation_end.open()
        sim = ReceiverSim(SerialPort(str(b)), QUICK).start()
        [delivery] = sim.send([FRAME])
        received = b""
        for _ in range(50):
            received += automation_end.recv(0.2)
            if received.endswith(DC4):
                break
        automation_end.send(bytes([ACK]))
        assert sim.wait_drained(10)
        sim.stop()
        automation_end.close()
    assert received == FRAME and delivery.acked and len(delivery.sends) == 1
