"""Automation outputs end to end (decisions section 12): a real ``alarmhub serve`` process takes
signals over HTTP and DC-09 and hands them on to the stand-in automation (tests.support.
automation_sim) as a Sur-Gard receiver does, on SQLite and PostgreSQL: the exact frames in commit
order, each once; resent after a NAK and after silence, one frame in flight; the backup address
after the fourth try; an outage of the automation with signals still coming; ``output test``.

AUTOMATION OUTPUT FAILURE comes after 60 s without delivery (core.outputs.FAILURE_SECONDS, which
neither the node's settings nor its supervision shorten): its rule is shown in
tests/store/test_outputs.py; here the node raises and restores it once the test has moved back
the time its sender reported the output failing since."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from my_dc09_spt.msg.dc05_msg import dc05_msg
from sqlalchemy import update

from alarmhub.clock import now_us
from alarmhub.core import system_alarms, units
from alarmhub.core.alarm_types import AUTOMATION_OUTPUT_FAILURE
from alarmhub.core.outputs import FAILURE_SECONDS, TRIES_PER_ADDRESS
from alarmhub.core.surgard import TERMINATOR
from alarmhub.outbound import automation
from alarmhub.store import schema
from alarmhub.store.engine import open_engine, write_transaction
from tests.support import dc09_panel
from tests.support.automation_sim import ACK, NAK, SILENT, Received, SimThread
from tests.support.database import POSTGRESQL, SQLITE, Record, database_url, db_rows
from tests.support.dc09_panel import Panel, kind, spt
from tests.support.in_process import InProcessStation, in_process_node
from tests.support.processes import (
    PostsSignals,
    Server,
    Station,
    as_dict,
    as_list,
    cli,
    cli_json,
    free_port,
    provision,
    wait_for,
)

pytestmark = pytest.mark.backends(SQLITE, POSTGRESQL)
SHORT_ACK = "0.5"  # seconds: --ack-timeout of the outputs that are left unanswered
_sequences = itertools.count(1)  # DC-09 sequence numbers: each frame a new one


@dataclass
class Node(Station):
    """The module's node: HTTP signals as site1:rx1, DC-09 panels on ``panel``."""

    panel: Panel

    def http(self, zone: str, panel: str = "1234", code: str = "E130") -> None:
        body = {"dnis": dc09_panel.DNIS, "panel": panel, "code": code, "area": "01",
                "zone_or_user": zone}  # fmt: skip
        answer = PostsSignals.post(self, body)
        assert answer.status_code == 200, answer.text

    def dc09(self, zone: str, account: str = "1234") -> None:
        """An ADM-CID burglary (E130) of ``account`` in area 02 by TCP, ACKed."""
        payload = dc05_msg.dc05event(account, {"code": "130", "zone": zone, "area": "2"})
        wire = spt(account).dc09block(next(_sequences), "ADM-CID", payload).encode()
        [answer] = self.panel.tcp([wire])
        assert kind(answer) == "ACK", answer

    def add(self, name: str, *settings: str) -> None:
        cli(self.data_dir, "output", "add", name, "--protocol", "surgard", *settings)

    def output(self, name: str) -> dict[str, Any]:
        listed = as_list(cli_json(self.data_dir, "output", "list"))
        return next(o for o in listed if o["name"] == name)

    def drained(self, name: str) -> None:
        """Wait for nothing to be left in the output's queue (once the automation has had
        its frames: a signal is queued when routed, after its sender has had its answer)."""
        wait_for(lambda: self.output(name)["queued"] == 0, f"{name} drained")

    def reported(self, name: str, **expected: object) -> None:
        """Wait for the node's report of the output to show ``expected`` (it writes its
        counts every 2 s), and fail showing what it shows instead."""

        def shown() -> dict[str, Any]:
            listed = self.output(name)
            return {key: listed[key] for key in expected}

        with contextlib.suppress(AssertionError):
            wait_for(lambda: shown() == expected, f"{name}'s report")
        assert shown() == expected

    def failing_for_a_minute(self, name: str) -> None:
        """Move the time the output has been failing since (as its node last reported it) a
        minute and more back: the node writes its report again only when it changes."""
        engine = open_engine(database_url(self.data_dir))
        try:
            with write_transaction(engine) as conn:
                done = conn.execute(
                    update(schema.automation_output)
                    .where(schema.automation_output.c.name == name)
                    .values(failing_since_us=now_us() - units.seconds_us(FAILURE_SECONDS + 1))
                )
                assert done.rowcount == 1
        finally:
            engine.dispose()

    def history(self, text: str) -> list[Record]:
        return db_rows(self.data_dir, "SELECT * FROM history WHERE hist_text = ?", text)

    def remove(self, name: str) -> None:
        cli(self.data_dir, "output", "remove", name, "--force")


@pytest.fixture(scope="module")
def node(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    data_dir = tmp_path_factory.mktemp("outputs")
    token = provision(data_dir)
    dc09_panel.provision(data_dir)  # dnis 1234 (mask 70####), accounts 701234 and 701002
    dc09_port = free_port()
    server = Server(data_dir, extra_args=("--dc09-listen", f"127.0.0.1:{dc09_port}")).start()
    node = Node(server, token, data_dir, Panel(dc09_port))
    try:
        yield node
    finally:
        node.close()
        assert server.stop() == 0
        log = server.log()
        assert "Traceback" not in log and "Exception in callback" not in log, log[-3000:]


@pytest.fixture
def sim() -> Iterator[SimThread]:
    with SimThread(port=free_port()).start() as sim:  # the same port again after an outage
        yield sim


def signals(received: list[Received]) -> list[Received]:
    """What came but the link tests (``1RRL`` ... ``@``)."""
    return [r for r in received if not r.frame.startswith(b"1")]


def frames(received: list[Received]) -> list[bytes]:
    return [r.frame for r in signals(received)]


def burglary(zone: str, area: str = "01", panel: str = "1234", header: str = "011") -> bytes:
    """``5`` + RR + L + `` 18`` + panel + E130 + area + zone + DC4, as section 12 spells it."""
    return f"5{header} 18{panel}E130{area}{zone}".encode() + TERMINATOR


def linked(sim: SimThread) -> None:
    """Wait for a link test to be ACKed: the node's sender is connected, nothing queued."""
    sim.until(lambda s: any(r.frame.startswith(b"1") and r.answer == ACK for r in s.received))


def test_http_and_dc09_signals_reach_the_automation_in_commit_order_once_each(
    node: Node, sim: SimThread
) -> None:
    with SimThread(port=free_port()).start() as some:
        node.add("every", "--connect", sim.address, "--receiver", "12", "--line", "3")
        node.add("some", "--connect", some.address, "--accounts", "7012")
        try:
            node.http("001")
            node.dc09("002")
            node.http("003", panel="1002")  # account 701002: not one of "some"'s
            node.dc09("004")
            node.http("005")
            node.dc09("006", account="1002")
            sim.until(lambda s: len(frames(s.received)) >= 6)
            some.until(lambda s: len(frames(s.received)) >= 4)
            node.drained("every")
            node.drained("some")
            assert frames(sim.received()) == [
                b"5123 181234E13001001\x14",
                b"5123 181234E13002002\x14",
                b"5123 181002E13001003\x14",
                b"5123 181234E13002004\x14",
                b"5123 181234E13001005\x14",
                b"5123 181002E13002006\x14",
            ]
            assert frames(some.received()) == [
                burglary("001"), burglary("002", "02"), burglary("004", "02"), burglary("005")
            ]  # fmt: skip
            assert {r.answer for r in sim.received() + some.received()} == {ACK}
            node.reported("every", state="up", sent=6, resent=0)
            node.reported("some", state="up", sent=4, resent=0)
        finally:
            node.remove("every")
            node.remove("some")


def test_a_routed_signal_reaches_the_automation_without_waiting_for_the_senders_poll(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim: SimThread
) -> None:
    """The node's writer tells the node when its routing has queued frames, and the idle
    sender reads them at once: with the poll for frames of other nodes an hour long, a signal
    still reaches the automation (a node in this process, its writer in a thread)."""
    monkeypatch.setattr(automation, "QUEUE_POLL_SECONDS", 3600.0)
    token = provision(tmp_path)
    cli(tmp_path, "output", "add", "woken", "--protocol", "surgard", "--connect", sim.address,
        "--heartbeat-seconds", "3600")  # fmt: skip
    with in_process_node(tmp_path) as running:
        station = InProcessStation(running, token, tmp_path)
        linked(sim)  # its first link test ACKed: idle, an hour from its next read of the queue
        body = {"dnis": dc09_panel.DNIS, "panel": "1234", "code": "E130", "area": "01",
                "zone_or_user": "001"}  # fmt: skip
        answer = station.post(body)
        assert answer.status_code == 200, answer.text
        sim.until(lambda s: len(frames(s.received)) >= 1)
        assert frames(sim.received()) == [burglary("001")]


def test_a_nak_and_silence_send_the_same_frame_again_one_frame_in_flight(
    node: Node, sim: SimThread
) -> None:
    node.add("resend", "--connect", sim.address, "--ack-timeout", SHORT_ACK)
    try:
        linked(sim)
        sim.on_loop(lambda s: setattr(s, "delay", 0.1))  # answers held back a moment
        sim.answer(ACK, NAK, SILENT, NAK)
        for zone in ("011", "012", "013"):
            node.http(zone)
        sim.until(lambda s: len(frames(s.received)) >= 6)
        node.drained("resend")
        got = signals(sim.received())
        assert [(r.frame, r.answer) for r in got] == [
            (burglary("011"), NAK),
            (burglary("011"), SILENT),
            (burglary("011"), NAK),
            (burglary("011"), ACK),
            (burglary("012"), ACK),
            (burglary("013"), ACK),
        ]
        assert sim.on_loop(lambda s: s.overlaps) == 0  # never a frame while one is unanswered
        node.reported("resend", state="up", sent=3, resent=3, naks=2, timeouts=1)
    finally:
        node.remove("resend")


def test_after_the_fourth_unanswered_try_the_frame_goes_to_the_backup(
    node: Node, sim: SimThread
) -> None:
    down = f"127.0.0.1:{free_port()}"  # a primary no one listens on
    with SimThread(port=free_port()).start() as backup:
        node.add("backed", "--connect", sim.address, "--backup", backup.address,
                 "--ack-timeout", SHORT_ACK)  # fmt: skip
        node.add("fallen", "--connect", down, "--backup", backup.address, "--accounts", "7010")
        try:
            linked(sim)
            sim.answer(SILENT)  # the primary stops answering
            node.http("021")
            node.http("022", panel="1002")  # for "fallen" (and "backed")
            backup.until(lambda s: len(frames(s.received)) >= 3)
            node.drained("backed")
            node.drained("fallen")
            assert [(r.frame, r.answer) for r in signals(sim.received())] == [
                (burglary("021"), SILENT)
            ] * TRIES_PER_ADDRESS
            on_backup = frames(backup.received())
            # "backed"'s two (the first kept) and "fallen"'s one, the two outputs side by side
            late = burglary("022", panel="1002")
            assert sorted(on_backup) == sorted([burglary("021"), late, late])
            assert node.output("backed")["address"] == backup.address
            assert node.output("fallen")["address"] == backup.address
        finally:
            node.remove("backed")
            node.remove("fallen")


def test_frames_wait_through_an_outage_of_the_automation_and_all_arrive_in_order(
    node: Node, sim: SimThread
) -> None:
    # the default ACK wait: the outage is the automation gone, and a late ACK on a loaded
    # machine (resending 031) is not what this test is about
    node.add("outage", "--connect", sim.address)
    try:
        linked(sim)
        node.http("031")
        sim.until(lambda s: len(frames(s.received)) == 1)
        node.drained("outage")  # its ACK recorded
        sim.stop()
        node.http("032")
        node.dc09("033")
        node.http("034", panel="1002")
        node.dc09("035")
        node.reported("outage", queued=4, state="down")
        wait_for(lambda: node.output("outage")["failing_since"], "the output reported failing")
        node.failing_for_a_minute("outage")
        failure = system_alarms.automation_output_failure("outage")
        [raised] = wait_for(lambda: node.history(failure), "AUTOMATION OUTPUT FAILURE outage")
        assert raised["type"] == AUTOMATION_OUTPUT_FAILURE.type
        sim.start()
        sim.until(lambda s: len(frames(s.received)) >= 5)
        node.drained("outage")
        assert frames(sim.received()) == [
            burglary("031"),
            burglary("032"),
            burglary("033", "02"),
            burglary("034", panel="1002"),
            burglary("035", "02"),
        ]
        node.reported("outage", state="up", sent=5, resent=0, failing_since=None)
        [restored] = wait_for(lambda: node.history(f"{failure} RESTORE"), "its restoral")
        assert restored["alarm_id"] == raised["alarm_id"]
        assert len(node.history(failure)) == 1
    finally:
        node.remove("outage")


def test_output_test_prints_the_automation_s_answer(node: Node, sim: SimThread) -> None:
    nobody = f"127.0.0.1:{free_port()}"
    node.add("tried", "--connect", sim.address, "--ack-timeout", SHORT_ACK)
    node.add("nobody", "--connect", nobody)
    try:

        def tested(name: str) -> tuple[int, dict[str, Any]]:
            answer = cli(node.data_dir, "output", "test", name, "--json", check=False)
            return answer.returncode, as_dict(json.loads(answer.stdout))

        assert tested("tried") == (0, {"name": "tried", "answer": "ACK", "ok": True})
        sim.answer(NAK)
        assert tested("tried") == (1, {"name": "tried", "answer": "NAK", "ok": False})
        sim.answer(SILENT)
        assert tested("tried") == (
            1, {"name": "tried", "answer": "no answer within 0.5 s", "ok": False}
        )  # fmt: skip
        code, answer = tested("nobody")
        assert (code, answer["ok"]) == (1, False)
        assert answer["answer"].startswith(f"{nobody}: "), answer
    finally:
        node.remove("tried")
        node.remove("nobody")
