"""Automation outputs in the store (``store.outputs``), on SQLite and PostgreSQL: the frames
routing queues in commit order for the outputs that want each account, with their exact bytes;
the Contact ID events supervision queues for what alarmhub knows itself of an account; a frame
deleted once delivered; the queue's counts; the output's lane held by one node at a time;
AUTOMATION OUTPUT FAILURE raised and restored from the sender's report; and OUTPUT CANNOT SEND
for a panel an output cannot carry."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine

from alarmhub.core import events
from alarmhub.core.alarm_types import AUTOMATION_OUTPUT_FAILURE, OUTPUT_CANNOT_SEND
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.outputs import CHANNEL, OutputReport, OutputSettings, QueuedFrame
from alarmhub.core.router import RoutePath
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import outputs, provisioning, queries, webhooks
from alarmhub.store import schema as s
from alarmhub.store.commit import SignalInsert, commit_signals
from alarmhub.store.engine import write_transaction
from alarmhub.store.routing import SignalRouting
from alarmhub.store.supervision import Supervision
from tests.support.database import POSTGRESQL
from tests.support.store_station import RETENTION_US, SECOND, T0, station

HOUR = 3600 * SECOND
DC4 = b"\x14"
EVERY = OutputSettings(0, "every", "surgard", "connect", ("127.0.0.1:1025",), None, None, (),
                       1, 1, 1, 4.0, 30)  # fmt: skip
SEVENTY = OutputSettings(0, "seventy", "surgard", "listen", ("0.0.0.0:1026",), None, None,
                         ("7000",), 12, 345, 3, 9.0, 5)  # fmt: skip
EIGHTY = OutputSettings(0, "eighty", "surgard", "serial", ("/dev/ttyS0",), 9600, "8N1", ("80",),
                        1, 2, 1, 4.0, 30)  # fmt: skip


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {"700012": "Acme", "800034": "Bee"}, staff=()) as engine:
        provisioning.add_dnis(engine, "D2", "80####")
        yield engine


def in_tx(engine: Engine, work: Any) -> Any:
    with write_transaction(engine) as conn:
        return work(conn)


def add(engine: Engine, *settings: OutputSettings) -> list[int]:
    return [in_tx(engine, lambda c, o=o: outputs.add(c, o, T0)) for o in settings]


def commit_and_route(
    engine: Engine, routing: SignalRouting, signals: Sequence[tuple[str, str, str, str]], at: int
) -> list[int]:
    """Commit ``(dnis, panel, code, zone)`` signals (area 01) and route them in one batch."""
    batch = [Signal("site", "rx", SignalFields(dnis, panel, code, "01", zone), "t", at)
             for dnis, panel, code, zone in signals]  # fmt: skip
    with write_transaction(engine) as conn:
        stored = commit_signals(conn, SignalInsert(engine), batch, RETENTION_US)
    with write_transaction(engine) as conn:
        routing.route(conn, at)
    return [x.incident_number for x in stored]


def queue(engine: Engine, output_id: int) -> list[QueuedFrame]:
    with engine.connect() as conn:
        return outputs.head(conn, output_id, 0, 1000)


def frames(engine: Engine, output_id: int) -> list[bytes]:
    return [q.frame for q in queue(engine, output_id)]


def listed(engine: Engine, now_us: int) -> dict[str, dict[str, Any]]:
    with engine.connect() as conn:
        return {row["name"]: row for row in outputs.list_outputs(conn, now_us)}


def history(engine: Engine, alarm_type: str) -> list[dict[str, Any]]:
    h = s.history.c
    query = select(s.history).where(h.type == alarm_type).order_by(h.incident_number)
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def report(failing_since_us: int | None, node: str = "node-a") -> OutputReport:
    state = "up" if failing_since_us is None else "down"
    return OutputReport(state, "127.0.0.1:1025", 5, 2, 4, 1, 1, T0, T0, failing_since_us, node)


# routing ---------------------------------------------------------------------------------------


def test_routing_queues_each_signal_in_commit_order_for_the_outputs_that_want_it(
    engine: Engine,
) -> None:
    routing = SignalRouting(engine, 1000, 2)
    commit_and_route(engine, routing, [("D1", "12", "E130", "001")], T0)  # no output yet
    every, seventy, eighty = add(engine, EVERY, SEVENTY, EIGHTY)
    with engine.connect() as conn:
        assert [o.name for o in outputs.settings(conn)] == ["eighty", "every", "seventy"]

    commit_and_route(engine, routing, [
        ("D1", "12", "E130", "001"),   # 700012
        ("D2", "34", "R301", "000"),   # 800034
        ("D9", "5", "E602", "000"),    # no line mask: no account
        ("D1", "77", "E110", "003"),   # 700077, not provisioned: forwarded as received
    ], T0 + SECOND)  # fmt: skip
    commit_and_route(engine, routing, [("D1", "abc", "E120", "002")], T0 + 2 * SECOND)

    assert frames(engine, every) == [
        b"5011 180012E13001001" + DC4,
        b"5011 180034R30101000" + DC4,
        b"5011 180005E60201000" + DC4,
        b"5011 180077E11001003" + DC4,
        b"5011 180ABCE12001002" + DC4,
    ]
    assert frames(engine, seventy) == [  # not 700abc
        b"512345 180012E13001001" + DC4,
        b"512345 180077E11001003" + DC4,
    ]
    assert frames(engine, eighty) == [b"5012 180034R30101000" + DC4]
    queued = queue(engine, every)
    assert [q.frame_id for q in queued] == sorted(q.frame_id for q in queued)
    assert [q.queued_us for q in queued] == [T0 + SECOND] * 4 + [T0 + 2 * SECOND]
    with engine.connect() as conn:
        rows = conn.execute(
            select(s.output_frame.c.account_number)
            .where(s.output_frame.c.output_id == every)
            .order_by(s.output_frame.c.frame_id)
        ).scalars()
        assert list(rows) == ["700012", "800034", "", "700077", "700abc"]


def cannot_send(engine: Engine) -> list[dict[str, Any]]:
    """The OUTPUT CANNOT SEND alarms, oldest first, each with its linked history events."""
    a, h = s.alarm.c, s.history.c
    with engine.connect() as conn:
        alarms = conn.execute(
            select(a.alarm_id, a.state, a.hist_text, a.panel, a.source)
            .where(a.type == OUTPUT_CANNOT_SEND.type)
            .order_by(a.alarm_id)
        ).mappings()
        shown = [dict(row) for row in alarms]
        for alarm in shown:
            linked = select(h.hist_text).where(h.alarm_id == alarm["alarm_id"])
            alarm["events"] = list(conn.execute(linked.order_by(h.incident_number)).scalars())
    return shown


def test_a_panel_sur_gard_cannot_carry_raises_one_alarm_an_output_while_it_is_open(
    engine: Engine,
) -> None:
    routing = SignalRouting(engine, 1000, 2)
    every, other = add(engine, EVERY, replace(EVERY, name="ever_"))  # "_": no LIKE wildcard
    commit_and_route(engine, routing, [
        ("D9", "ABCDEFGHIJ", "E130", "001"),  # 10 characters, not hexadecimal: no frame
        ("D9", "12", "E130", "001"),
        ("D9", "XYZ", "E110", "002"),  # the same outputs, the same batch: joins their alarm
    ], T0)  # fmt: skip
    good = [b"5011 180012E13001001" + DC4]
    assert frames(engine, every) == frames(engine, other) == good
    texts = {
        name: [f"OUTPUT CANNOT SEND {name} ABCDEFGHIJ E130", f"OUTPUT CANNOT SEND {name} XYZ E110"]
        for name in ("ever_", "every")
    }
    assert cannot_send(engine) == [  # the outputs by name
        {"alarm_id": ANY, "state": "pending", "hist_text": texts[name][0], "panel": "ABCDEFGHIJ",
         "source": "site", "events": texts[name]}
        for name in ("ever_", "every")
    ]  # fmt: skip

    commit_and_route(
        engine, routing, [("D9", "GHIJ", "E130", "003"), ("D9", "34", "E130", "003")], T0 + SECOND
    )  # fmt: skip: a later batch, the alarms still open
    assert frames(engine, every) == [*good, b"5011 180034E13001003" + DC4]
    alarms = cannot_send(engine)
    assert [len(alarm["events"]) for alarm in alarms] == [3, 3]
    assert alarms[1]["events"][-1] == "OUTPUT CANNOT SEND every GHIJ E130"

    with write_transaction(engine) as conn:  # an operator resolved the output's alarm
        conn.execute(
            update(s.alarm).where(s.alarm.c.alarm_id == alarms[1]["alarm_id"])
            .values(state="resolved")
        )  # fmt: skip
    commit_and_route(engine, routing, [("D9", "KLM", "E130", "004")], T0 + 2 * SECOND)
    after = cannot_send(engine)
    assert len(after) == 3 and after[0]["events"][-1] == "OUTPUT CANNOT SEND ever_ KLM E130"
    assert after[2]["hist_text"] == "OUTPUT CANNOT SEND every KLM E130"
    assert after[2]["state"] == "pending" and after[2]["events"] == [after[2]["hist_text"]]


def test_removed_outputs_get_nothing_more(engine: Engine) -> None:
    routing = SignalRouting(engine, 1000, 2)
    every, seventy = add(engine, EVERY, SEVENTY)
    commit_and_route(engine, routing, [("D1", "12", "E130", "001")], T0)
    assert in_tx(engine, lambda c: outputs.hold(c, every, "node-a", T0)) is True
    assert in_tx(engine, lambda c: outputs.remove(c, "every")) is True
    assert in_tx(engine, lambda c: outputs.remove(c, "every")) is False
    commit_and_route(engine, routing, [("D1", "12", "E130", "002")], T0 + SECOND)
    assert frames(engine, every) == []
    assert len(frames(engine, seventy)) == 2
    with engine.connect() as conn:
        lane = s.delivery_lane.c
        assert conn.execute(select(lane.lane_id).where(lane.channel == CHANNEL)).all() == []


def test_an_invalid_or_second_output_of_a_name_is_refused(engine: Engine) -> None:
    add(engine, EVERY)
    with pytest.raises(ProvisioningError, match="exists"):
        add(engine, EVERY)
    bad = OutputSettings(**{**EVERY.__dict__, "name": "bad", "line": 10})
    with pytest.raises(ProvisioningError, match="does not fit"):
        add(engine, bad)
    with pytest.raises(ValueError, match="state"):
        in_tx(engine, lambda c: outputs.report(c, 1, OutputReport(
            "gone", None, 0, 0, 0, 0, 0, None, None, None, "n"), T0))  # fmt: skip


# supervision's own events ----------------------------------------------------------------------


def test_supervision_queues_communication_failure_restoral_and_fail_to_test(
    engine: Engine,
) -> None:
    routing = SignalRouting(engine, 1000, 2)
    commit_and_route(engine, routing, [("D1", "12", "E130", "001")], T0)  # account 700012
    every, seventy, eighty = add(engine, EVERY, SEVENTY, EIGHTY)
    supervision = Supervision(engine, 60)
    with write_transaction(engine) as conn:
        conn.execute(insert(s.dc09_line).values(receiver="1", line="2", dnis="D1", created_us=T0))
        conn.execute(insert(s.dc09_account).values(
            account="0012", receiver="1", line="2", last_message_us=T0, failed_us=T0,
            created_us=T0))  # fmt: skip
        conn.execute(  # its periodic test is overdue
            update(s.account)
            .where(s.account.c.account_number == "700012")
            .values(test_interval_s=60, last_test_us=T0 - HOUR)
        )
    in_tx(engine, lambda c: supervision.supervise(c, T0 + SECOND))
    with write_transaction(engine) as conn:
        conn.execute(update(s.dc09_account).values(failed_us=None, last_message_us=T0 + SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 2 * SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 3 * SECOND))  # nothing new

    assert frames(engine, every) == [
        b"5011 180012E35800000" + DC4,  # fail to test, the panel of the account's last signal
        b"5011 180012E35000000" + DC4,  # the DC-09 account's communication failure
        b"5011 180012R35000000" + DC4,  # and its restoral
    ]
    assert frames(engine, seventy) == [
        b"512345 180012E35800000" + DC4,
        b"512345 180012E35000000" + DC4,
        b"512345 180012R35000000" + DC4,
    ]
    assert frames(engine, eighty) == []
    assert [q.queued_us for q in queue(engine, every)] == [T0 + SECOND] * 2 + [T0 + 2 * SECOND]


def test_fail_to_test_of_an_account_with_no_signal_names_the_account(engine: Engine) -> None:
    [every] = add(engine, EVERY)
    with write_transaction(engine) as conn:
        conn.execute(
            update(s.account)
            .where(s.account.c.account_number == "800034")
            .values(test_interval_s=60, last_test_us=T0 - HOUR)
        )
    in_tx(engine, lambda c: Supervision(engine, 60).supervise(c, T0))
    assert frames(engine, every) == [b"5011 580000800034E35800000" + DC4]


# delivering ------------------------------------------------------------------------------------


def test_a_delivered_frame_is_deleted_and_the_queue_counted(engine: Engine) -> None:
    routing = SignalRouting(engine, 1000, 2)
    [every] = add(engine, EVERY)
    commit_and_route(engine, routing, [("D1", "12", "E130", "001"), ("D1", "12", "R130", "001")],
                     T0)  # fmt: skip
    commit_and_route(engine, routing, [("D1", "12", "E131", "002")], T0 + 2 * HOUR)
    first, second, third = queue(engine, every)
    with engine.connect() as conn:
        assert outputs.head(conn, every, first.frame_id, 1) == [second]

    now = T0 + 25 * HOUR
    shown = listed(engine, now)["every"]
    assert (shown["queued"], shown["stale"]) == (3, 2)  # queued 24 h ago and more: kept
    assert shown["oldest_queued_s"] == 25 * 3600
    assert (shown["state"], shown["addresses"], shown["accounts"]) == (
        "idle", ["127.0.0.1:1025"], [])  # fmt: skip

    in_tx(engine, lambda c: outputs.delivered(c, every, first.frame_id))
    in_tx(engine, lambda c: outputs.report(c, every, report(None), now))
    assert queue(engine, every) == [second, third]
    shown = listed(engine, now)["every"]
    assert (shown["queued"], shown["stale"], shown["oldest_queued_s"]) == (2, 1, 25 * 3600)
    assert {k: shown[k] for k in ("state", "address", "sent", "resent", "acks", "naks",
                                  "timeouts", "last_delivered_us", "held_by",
                                  "reported_us")} == {
        "state": "up", "address": "127.0.0.1:1025", "sent": 5, "resent": 2, "acks": 4,
        "naks": 1, "timeouts": 1, "last_delivered_us": T0, "held_by": "node-a",
        "reported_us": now,
    }  # fmt: skip
    in_tx(engine, lambda c: outputs.delivered(c, every, second.frame_id))
    in_tx(engine, lambda c: outputs.delivered(c, every, third.frame_id))
    shown = listed(engine, now)["every"]
    assert (shown["queued"], shown["stale"], shown["oldest_queued_s"]) == (0, 0, None)


def test_one_node_holds_an_output_until_its_lease_runs_out(engine: Engine) -> None:
    every, seventy = add(engine, EVERY, SEVENTY)

    def hold(output_id: int, node: str, at: int) -> bool:
        return bool(in_tx(engine, lambda c: outputs.hold(c, output_id, node, at)))

    assert hold(every, "node-a", T0) is True
    assert hold(every, "node-b", T0 + SECOND) is False
    assert hold(seventy, "node-b", T0 + SECOND) is True
    assert hold(every, "node-a", T0 + 2 * SECOND) is True  # renewed: 10 s from here
    assert hold(every, "node-b", T0 + 11 * SECOND) is False
    assert hold(every, "node-b", T0 + 12 * SECOND + 1) is True  # node-a's lease ran out
    assert hold(every, "node-a", T0 + 13 * SECOND) is False
    in_tx(engine, lambda c: outputs.release(c, "node-b"))
    assert hold(every, "node-a", T0 + 14 * SECOND) is True
    assert hold(seventy, "node-a", T0 + 14 * SECOND) is True


@pytest.mark.backends(POSTGRESQL)
def test_two_nodes_claiming_an_output_at_once_one_holds_it(engine: Engine) -> None:
    """node-b claims while node-a's claim is not committed: it waits, then finds it held."""
    [every] = add(engine, EVERY)
    answers: list[bool] = []
    with write_transaction(engine) as conn:
        assert outputs.hold(conn, every, "node-a", T0) is True
        other = threading.Thread(
            target=lambda: answers.append(
                in_tx(engine, lambda c: outputs.hold(c, every, "node-b", T0))
            )
        )
        other.start()
    other.join()
    assert answers == [False]
    with engine.connect() as conn:
        lane = s.delivery_lane.c
        held = conn.execute(select(lane.claimed_by).where(lane.channel == CHANNEL)).all()
    assert [tuple(r) for r in held] == [("node-a",)]


def test_each_channel_releases_only_its_own_lanes(engine: Engine) -> None:
    [every] = add(engine, EVERY)
    lane = s.delivery_lane.c
    with write_transaction(engine) as conn:
        conn.execute(insert(s.delivery_lane).values(
            channel="webhook", target_id=1, lane_key="", claimed_by="node-a",
            claimed_until_us=T0 + HOUR))  # fmt: skip
        assert outputs.hold(conn, every, "node-a", T0)
    in_tx(engine, lambda c: outputs.release(c, "node-a"))
    with engine.connect() as conn:
        rows = conn.execute(select(lane.channel, lane.claimed_by).order_by(lane.channel))
        assert [tuple(r) for r in rows] == [(CHANNEL, None), ("webhook", "node-a")]
    assert in_tx(engine, lambda c: outputs.hold(c, every, "node-a", T0))
    in_tx(engine, lambda c: webhooks.release(c, "node-a"))  # and the webhooks only theirs
    with engine.connect() as conn:
        rows = conn.execute(select(lane.channel, lane.claimed_by).order_by(lane.channel))
        assert [tuple(r) for r in rows] == [(CHANNEL, "node-a"), ("webhook", None)]


# AUTOMATION OUTPUT FAILURE ---------------------------------------------------------------------


def test_an_output_failing_for_a_minute_raises_one_failure_and_restores_it(
    engine: Engine,
) -> None:
    [every] = add(engine, EVERY)
    supervision = Supervision(engine, 60)
    text = "AUTOMATION OUTPUT FAILURE every"
    in_tx(engine, lambda c: outputs.report(c, every, report(T0), T0))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 59 * SECOND))
    assert history(engine, AUTOMATION_OUTPUT_FAILURE.type) == []
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 60 * SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 61 * SECOND))

    [raised] = history(engine, AUTOMATION_OUTPUT_FAILURE.type)
    assert (raised["hist_text"], raised["account_number"]) == (text, "")
    alarm_id = raised["alarm_id"]
    assert listed(engine, T0)["every"]["alarm_id"] == alarm_id
    with engine.connect() as conn:
        alarm = queries.alarm(conn, alarm_id)
    assert alarm is not None and alarm["restore_us"] is None

    in_tx(engine, lambda c: outputs.report(c, every, report(None), T0 + 62 * SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 63 * SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 64 * SECOND))

    raised_again, restoral = history(engine, AUTOMATION_OUTPUT_FAILURE.type)
    assert raised_again["incident_number"] == raised["incident_number"]
    assert (restoral["hist_text"], restoral["alarm_id"]) == (f"{text} RESTORE", alarm_id)
    assert restoral["pr_checksum"] == RoutePath.SYSTEM.value
    with engine.connect() as conn:
        alarm = queries.alarm(conn, alarm_id)
        body = conn.execute(select(s.event.c.kind, s.event.c.body).order_by(s.event.c.event_id))
        supervised = [(k, json.loads(b)["data"]) for k, b in body if "supervision" in k]
    assert alarm is not None and alarm["restore_us"] == T0 + 63 * SECOND
    assert listed(engine, T0)["every"]["alarm_id"] is None
    data = events.supervision_data(AUTOMATION_OUTPUT_FAILURE, "", alarm_id, output="every")
    assert supervised == [(events.SUPERVISION_FAILED, data), (events.SUPERVISION_RESTORED, data)]
