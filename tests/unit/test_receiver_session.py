"""A receiver link's session with a writer the test controls: signals of an event frame, ACK
only after the commit, NAK when it cannot be stored, answers in frame order, reading paused
while answers wait, receiver events and unreadable frames kept, and a link's supervision."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from alarmhub.core.alarm_types import RECEIVER_DATA, RECEIVER_EVENT
from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.receiver_links import DESTINATION, LinkSettings
from alarmhub.core.signal import Signal
from alarmhub.core.surgard import contact_id_frame, link_test_frame
from alarmhub.dc09.receiver import UNMAPPED_DNIS
from alarmhub.receivers import links, surgard
from alarmhub.receivers import session as session_module
from alarmhub.receivers.frames import ACK, NAK, Options
from alarmhub.receivers.session import IN_FLIGHT_MAX, Link, Session, Traffic
from alarmhub.store.commit import Stored
from tests.support.processes import free_port

EVENT = contact_id_frame(1, 1, "1234", "E130", "01", "015")
LINK_TEST = link_test_frame(1, 1)
RECEIVER_EVENT_FRAME = b"0011[#0000|NRU0000]\x14"


@dataclass
class FakeWriter:
    """Holds every signal's future for the test to resolve; runs kept frames at once."""

    signals: list[Signal] = field(default_factory=list)
    futures: list[asyncio.Future[Stored]] = field(default_factory=list)
    refuse: bool = False
    failing_runs: bool = False

    def enqueue(self, sig: Signal) -> asyncio.Future[Stored]:
        if self.refuse:
            raise StoreUnavailable("writer not running")
        future: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        self.signals.append(sig)
        self.futures.append(future)
        return future

    async def run(self, work: Callable[[Any], Any]) -> Any:
        if self.failing_runs:
            raise StoreUnavailable("database away")
        return work(None)


@dataclass
class FakeKeeper:
    kept: list[tuple[str, str, str]] = field(default_factory=list)

    def keep(
        self,
        conn: Any,
        link: str,
        kind: str,
        text: str,
        received_us: int,
        receiver: str = "",
        line: str = "",
    ) -> int:
        self.kept.append((link, kind, text))
        return len(self.kept)


class FakeTransport:
    def __init__(self) -> None:
        self.written = b""
        self.paused = False
        self.closing = False

    def write(self, data: bytes) -> None:
        self.written += data

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1025)

    def close(self) -> None:
        self.closing = True


def _link(writer: FakeWriter, keeper: FakeKeeper, lines: dict[tuple[str, str], str]) -> Link:
    return Link(
        "SG1",
        surgard,  # type: ignore[arg-type]
        Options(),
        writer,
        keeper,
        lambda receiver, line: lines.get((receiver, line)),
    )


def _session(
    lines: dict[tuple[str, str], str] | None = None,
) -> tuple[Session, FakeTransport, FakeWriter, FakeKeeper]:
    writer, keeper, transport = FakeWriter(), FakeKeeper(), FakeTransport()
    session = Session(_link(writer, keeper, lines or {}))
    session.connection_made(transport)  # type: ignore[arg-type]
    return session, transport, writer, keeper


async def _turns(n: int = 3) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_an_event_is_acked_only_after_its_commit_and_answers_keep_the_frames_order() -> None:
    async def scenario() -> None:
        session, transport, writer, _ = _session({("01", "1"): "R1"})
        session.data_received(EVENT + LINK_TEST)
        await _turns()
        assert transport.written == b""  # the link test waits behind the uncommitted event
        (sig,) = writer.signals
        assert (sig.source, sig.destination, sig.idempotency_key) == ("SG1 R1L1", DESTINATION, None)
        assert tuple(sig.fields) == ("R1", "1234", "E130", "01", "015")
        writer.futures[0].set_result(Stored(7))
        await _turns()
        assert transport.written == ACK + ACK
        assert (session.link.traffic.frames, session.link.traffic.acks) == (2, 2)

    asyncio.run(scenario())


def test_an_unmapped_line_stores_the_unmapped_dnis() -> None:
    async def scenario() -> None:
        session, _, writer, _ = _session()
        session.data_received(contact_id_frame(2, 3, "1234", "E130", "01", "015"))
        (sig,) = writer.signals
        assert (sig.source, sig.fields.dnis) == ("SG1 R2L3", UNMAPPED_DNIS)

    asyncio.run(scenario())


@pytest.mark.parametrize("how", ["refused", "failed"])
def test_an_event_that_cannot_be_stored_is_naked(how: str) -> None:
    async def scenario() -> None:
        session, transport, writer, _ = _session()
        writer.refuse = how == "refused"
        session.data_received(EVENT)
        if how == "failed":
            writer.futures[0].set_exception(StoreUnavailable("commit failed"))
        await _turns()
        assert transport.written == NAK
        assert (session.link.traffic.acks, session.link.traffic.naks) == (0, 1)

    asyncio.run(scenario())


def test_receiver_events_and_unreadable_frames_are_kept_then_acked() -> None:
    async def scenario() -> None:
        session, transport, writer, keeper = _session()
        session.data_received(RECEIVER_EVENT_FRAME + b"\x01garbage\x14")
        await _turns(6)
        assert transport.written == ACK + ACK
        assert [(k[0], k[1]) for k in keeper.kept] == [
            ("SG1", RECEIVER_EVENT.type),
            ("SG1", RECEIVER_DATA.type),
        ]
        assert keeper.kept[1][2] == "\\x01garbage[DC4]"
        assert session.link.traffic.unreadable == 1
        writer.failing_runs = True
        session.data_received(b"more garbage\x14")
        await _turns(6)
        assert transport.written == ACK + ACK + NAK

    asyncio.run(scenario())


def test_a_frame_cut_by_the_closing_connection_is_kept_unanswered() -> None:
    async def scenario() -> None:
        session, transport, _, keeper = _session()
        session.data_received(LINK_TEST + b"5011 181234E13")
        await _turns()
        session.connection_lost(None)
        await _turns(6)
        assert transport.written == ACK
        assert keeper.kept == [("SG1", RECEIVER_DATA.type, "5011 181234E13")]
        assert session.link.traffic.unreadable == 1

    asyncio.run(scenario())


def test_reading_pauses_while_answers_wait_for_their_commits() -> None:
    async def scenario() -> None:
        session, transport, writer, _ = _session()
        session.data_received(EVENT * (IN_FLIGHT_MAX - 1))
        assert not transport.paused
        session.data_received(EVENT)
        assert transport.paused
        for future in writer.futures:
            future.set_result(Stored(1))
        await _turns()
        assert not transport.paused
        assert transport.written == ACK * IN_FLIGHT_MAX

    asyncio.run(scenario())


def test_a_read_of_many_frames_is_taken_in_flight_max_at_a_time() -> None:
    async def scenario() -> None:
        session, transport, writer, _ = _session()
        session.data_received(EVENT * (IN_FLIGHT_MAX + 4))
        assert len(writer.signals) == IN_FLIGHT_MAX and transport.paused
        for future in writer.futures:
            future.set_result(Stored(1))
        await _turns()
        assert len(writer.signals) == IN_FLIGHT_MAX + 4 and not transport.paused
        for future in writer.futures[IN_FLIGHT_MAX:]:
            future.set_result(Stored(2))
        await _turns()
        assert transport.written == ACK * (IN_FLIGHT_MAX + 4)

    asyncio.run(scenario())


def test_per_minute_counts_the_frames_of_the_last_minute_only() -> None:
    traffic = Traffic()
    traffic.seen(b"x", 1)
    traffic.seen(b"y", 2)
    assert traffic.per_minute() == 2
    traffic._seconds[0][0] -= 61  # both frames a minute ago
    assert traffic.per_minute() == 0
    assert (traffic.frames, traffic.last_frame, traffic.last_seen_us) == (2, "y", 2)


def test_a_silent_link_fails_once_and_its_next_frame_restores_it() -> None:
    async def scenario() -> None:
        supervisor = links.LinkSupervisor.__new__(links.LinkSupervisor)
        supervisor.running = {}
        supervisor._urgent = asyncio.Event()
        settings = LinkSettings("SG1", "surgard", "listen", "127.0.0.1:0", heartbeat_timeout_s=10)
        link = _link(FakeWriter(), FakeKeeper(), {})
        run = links._Running(settings, link, None, links.IDLE, time.monotonic())  # type: ignore[arg-type]
        supervisor.running["SG1"] = run
        link.alive = lambda: supervisor._alive(run)
        supervisor.check(time.monotonic() + 5)
        assert run.state == links.IDLE
        supervisor.check(time.monotonic() + 11)
        assert run.state == links.FAILED and supervisor._urgent.is_set()
        supervisor._urgent.clear()
        supervisor.check(time.monotonic() + 12)
        assert not supervisor._urgent.is_set()  # failed once
        session = Session(link)
        session.connection_made(FakeTransport())  # type: ignore[arg-type]
        session.data_received(LINK_TEST)
        assert run.state == links.UP and supervisor._urgent.is_set()

    asyncio.run(scenario())


def test_an_event_not_committed_in_time_is_naked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "STORE_SECONDS", 0.01)

    async def scenario() -> None:
        session, transport, writer, _ = _session()
        session.data_received(EVENT)
        await asyncio.sleep(0.05)
        assert transport.written == NAK
        writer.futures[0].set_result(Stored(1))  # committed after all: kept, answered once
        await _turns()
        assert transport.written == NAK

    asyncio.run(scenario())


def test_a_link_that_cannot_run_stalls_no_other() -> None:
    async def scenario() -> None:
        engine: Any = type("Engine", (), {"dialect": type("Dialect", (), {"name": "sqlite"})})
        supervisor = links.LinkSupervisor(engine, FakeWriter(), FakeKeeper(), "node")
        provisioned = [
            LinkSettings("BAD", "surgard", "listen", "no-port-here"),
            LinkSettings("ODD", "morse", "listen", f"127.0.0.1:{free_port()}"),
            LinkSettings("GOOD", "surgard", "listen", f"127.0.0.1:{free_port()}"),
        ]
        supervisor._read = lambda: (provisioned, {}, {})  # type: ignore[method-assign]
        await supervisor.follow()
        await supervisor.follow()
        assert list(supervisor.running) == ["GOOD"]
        assert len(supervisor._refused) == 2
        await supervisor.stop()

    asyncio.run(scenario())
