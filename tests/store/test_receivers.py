"""Receiver links in the store (``store.receivers``), on SQLite and PostgreSQL: links and lines
provisioned and removed, the holding node's reports and the failure they mark, receiver events
and unreadable frames kept and raised to pending, and supervision's one RECEIVER LINK FAILURE
and its restoral."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.core import events, system_alarms
from alarmhub.core.alarm_types import (
    ALARM_TEXT_MAX,
    RECEIVER_DATA,
    RECEIVER_EVENT,
    RECEIVER_LINK_FAILURE,
)
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.operations import AlarmState
from alarmhub.core.router import RoutePath
from alarmhub.store import queries, receivers
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from alarmhub.store.receivers import FrameKeeper, LinkReport, LinkSettings
from alarmhub.store.supervision import Supervision
from tests.support.store_station import SECOND, T0, station

RX1 = LinkSettings("rx1", "surgard", "listen", "0.0.0.0:1025")
SERIAL = LinkSettings("rx2", "ademco685", "serial", "/dev/ttyS0", 19200, "7E1", 3, 30)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {}, staff=()) as engine:  # nobody to hand alarms to: they pend
        with write_transaction(engine) as conn:
            receivers.add_link(conn, RX1, T0)
        yield engine


def in_tx(engine: Engine, work: Any) -> Any:
    with write_transaction(engine) as conn:
        return work(conn)


def reported(state: str, last_seen_us: int | None = T0) -> LinkReport:
    return LinkReport("rx1", state, "node-a", last_seen_us, "1011s@[DC4]", 7, 6, 1, 1, 3)


def states(engine: Engine) -> dict[str, dict[str, Any]]:
    with engine.connect() as conn:
        return {row["name"]: row for row in receivers.link_states(conn)}


def history(engine: Engine, alarm_type: str) -> list[dict[str, Any]]:
    h = s.history.c
    query = select(s.history).where(h.type == alarm_type).order_by(h.incident_number)
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def outbox(engine: Engine) -> list[tuple[str, dict[str, Any]]]:
    with engine.connect() as conn:
        rows = conn.execute(select(s.event.c.kind, s.event.c.body).order_by(s.event.c.event_id))
        return [(kind, json.loads(body)) for kind, body in rows]


# links and lines ------------------------------------------------------------------------------


def test_links_are_added_listed_by_name_and_removed_with_their_lines(engine: Engine) -> None:
    in_tx(engine, lambda c: receivers.add_link(c, SERIAL, T0 + 1))
    with engine.connect() as conn:
        assert receivers.links(conn) == [
            LinkSettings(**{**_fields(RX1), "changed_us": T0}),
            LinkSettings(**{**_fields(SERIAL), "changed_us": T0 + 1}),
        ]
    with pytest.raises(ProvisioningError, match="exists"):
        in_tx(engine, lambda c: receivers.add_link(c, RX1, T0))
    in_tx(engine, lambda c: receivers.add_line(c, "rx2", 1, 2, "D1", T0))

    assert in_tx(engine, lambda c: receivers.remove_link(c, "rx2")) is True
    assert in_tx(engine, lambda c: receivers.remove_link(c, "rx2")) is False
    with engine.connect() as conn:
        assert [link.name for link in receivers.links(conn)] == ["rx1"]
        assert receivers.lines(conn) == []


def test_an_invalid_link_is_refused(engine: Engine) -> None:
    link = LinkSettings(**{**_fields(RX1), "name": "rx9", "baud": 9600})
    with pytest.raises(ProvisioningError, match="serial links only"):
        in_tx(engine, lambda c: receivers.add_link(c, link, T0))
    assert [link.name for link in in_tx(engine, receivers.links)] == ["rx1"]


def test_lines_map_receiver_and_line_numbers_to_a_dnis(engine: Engine) -> None:
    in_tx(engine, lambda c: receivers.add_link(c, SERIAL, T0))
    in_tx(engine, lambda c: receivers.add_line(c, "rx1", 1, 1, "D1", T0))
    in_tx(engine, lambda c: receivers.add_line(c, "rx1", 12, 100, "D2", T0))
    in_tx(engine, lambda c: receivers.add_line(c, "rx2", 1, 1, "D3", T0))
    for mapping, problem in [
        (("rx1", 1, 1), "already mapped"),
        (("rx3", 1, 1), "no receiver link"),
        (("rx1", 100, 1), "invalid receiver"),
        (("rx1", 1, 1000), "invalid line"),
    ]:
        with pytest.raises(ProvisioningError, match=problem):
            in_tx(engine, lambda c, m=mapping: receivers.add_line(c, *m, "D9", T0))
    with pytest.raises(ProvisioningError, match="invalid dnis"):
        in_tx(engine, lambda c: receivers.add_line(c, "rx1", 2, 2, "000", T0))

    with engine.connect() as conn:
        assert receivers.line_map(conn) == {
            ("rx1", 1, 1): "D1", ("rx1", 12, 100): "D2", ("rx2", 1, 1): "D3"
        }  # fmt: skip
        assert receivers.lines(conn, "rx2") == [("rx2", 1, 1, "D3")]
    assert states(engine)["rx1"]["lines"] == 2
    assert in_tx(engine, lambda c: receivers.remove_line(c, "rx1", 12, 100)) is True
    assert in_tx(engine, lambda c: receivers.remove_line(c, "rx1", 12, 100)) is False
    with engine.connect() as conn:
        assert receivers.lines(conn, "rx1") == [("rx1", 1, 1, "D1")]


# the holding node's reports -------------------------------------------------------------------


def test_a_report_writes_the_state_and_a_failed_one_marks_the_failure_once(engine: Engine) -> None:
    assert states(engine)["rx1"]["state"] == "idle"
    in_tx(engine, lambda c: receivers.report(c, [reported("up")], T0 + SECOND))
    row = states(engine)["rx1"]
    assert {k: row[k] for k in ("state", "held_by", "last_seen_us", "last_frame", "frames",
                                "acks", "naks", "unreadable", "per_minute", "reported_us")} == {
        "state": "up", "held_by": "node-a", "last_seen_us": T0, "last_frame": "1011s@[DC4]",
        "frames": 7, "acks": 6, "naks": 1, "unreadable": 1, "per_minute": 3,
        "reported_us": T0 + SECOND,
    }  # fmt: skip
    assert (row["failed_us"], row["failed"]) == (None, False)

    in_tx(engine, lambda c: receivers.report(c, [reported("failed")], T0 + 2 * SECOND))
    in_tx(engine, lambda c: receivers.report(c, [reported("failed")], T0 + 3 * SECOND))
    row = states(engine)["rx1"]
    assert (row["state"], row["failed_us"], row["failed"]) == ("failed", T0 + 2 * SECOND, True)

    in_tx(engine, lambda c: receivers.report(c, [reported("idle", None)], T0 + 4 * SECOND))
    row = states(engine)["rx1"]
    assert (row["state"], row["failed_us"], row["last_seen_us"]) == ("idle", None, None)
    with pytest.raises(ValueError, match="state"):
        in_tx(engine, lambda c: receivers.report(c, [reported("down")], T0))


# receiver events and unreadable frames -----------------------------------------------------


def test_kept_frames_pend_as_receiver_event_and_receiver_data_with_their_text(
    engine: Engine,
) -> None:
    keeper = FrameKeeper(engine)
    event = in_tx(
        engine, lambda c: keeper.keep(c, "rx1", "RXEVT", "#0000|NRU0000", T0, "01", "001")
    )
    data = in_tx(engine, lambda c: keeper.keep(c, "rx1", "RXDAT", "5011s18[DC4]", T0 + 1))
    long_text = "\\x00" * 300  # longer than the kept column
    longest = in_tx(engine, lambda c: keeper.keep(c, "rx1", "RXDAT", long_text, T0 + 2))

    with engine.connect() as conn:
        pending = {a["alarm_id"]: a for a in queries.pending_alarms(conn)}
        kept = conn.execute(
            select(
                s.receiver_frame.c.kind, s.receiver_frame.c.frame, s.receiver_frame.c.alarm_id
            ).order_by(s.receiver_frame.c.frame_id)
        ).all()
    assert set(pending) == {event, data, longest}
    assert {k: pending[event][k] for k in ("type", "account_number", "hist_text", "source",
                                           "destination", "received_us")} == {
        "type": RECEIVER_EVENT.type, "account_number": "",
        "hist_text": "RECEIVER EVENT rx1 #0000|NRU0000", "source": "rx1", "destination": "R1L1",
        "received_us": T0,
    }  # fmt: skip
    assert pending[data]["type"] == RECEIVER_DATA.type
    assert pending[data]["hist_text"] == "RECEIVER DATA rx1 5011s18[DC4]"
    assert pending[longest]["hist_text"] == system_alarms.receiver_data("rx1", long_text)
    assert len(pending[longest]["hist_text"]) == ALARM_TEXT_MAX
    assert kept[:2] == [("RXEVT", "#0000|NRU0000", event), ("RXDAT", "5011s18[DC4]", data)]
    assert kept[2][1] == receivers.kept_text(long_text)
    assert kept[2][1].endswith("[1200 CHARACTERS, CUT]")
    assert len(kept[2][1]) == s.receiver_frame.c.frame.type.length  # type: ignore[attr-defined]
    assert [kind for kind, _ in outbox(engine)] == [events.ALARM_RAISED] * 3
    with pytest.raises(ValueError, match="kind"):
        in_tx(engine, lambda c: keeper.keep(c, "rx1", "RXFL", "x", T0))


# supervision ----------------------------------------------------------------------------------


def test_supervision_raises_one_link_failure_and_restores_it(engine: Engine) -> None:
    supervision = Supervision(engine, 60)
    text = "RECEIVER LINK FAILURE rx1"
    in_tx(engine, lambda c: receivers.report(c, [reported("failed")], T0 + SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 2 * SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 3 * SECOND))

    [raised] = history(engine, RECEIVER_LINK_FAILURE.type)
    assert (raised["hist_text"], raised["account_number"]) == (text, "")
    alarm_id = raised["alarm_id"]
    with engine.connect() as conn:
        alarm = queries.alarm(conn, alarm_id)
    assert alarm is not None
    assert (alarm["state"], alarm["restore_us"]) == (AlarmState.PENDING, None)
    assert states(engine)["rx1"]["alarm_id"] == alarm_id

    in_tx(engine, lambda c: receivers.report(c, [reported("up")], T0 + 4 * SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 5 * SECOND))
    in_tx(engine, lambda c: supervision.supervise(c, T0 + 6 * SECOND))

    raised_again, restoral = history(engine, RECEIVER_LINK_FAILURE.type)
    assert raised_again["incident_number"] == raised["incident_number"]
    assert (restoral["hist_text"], restoral["alarm_id"]) == (f"{text} RESTORE", alarm_id)
    assert restoral["pr_checksum"] == RoutePath.SYSTEM.value
    with engine.connect() as conn:
        alarm = queries.alarm(conn, alarm_id)
    assert alarm is not None and alarm["restore_us"] == T0 + 5 * SECOND
    assert states(engine)["rx1"]["alarm_id"] is None
    supervised = [(kind, body["data"]) for kind, body in outbox(engine) if "supervision" in kind]
    assert supervised == [
        (events.SUPERVISION_FAILED, events.supervision_data(
            RECEIVER_LINK_FAILURE, "", alarm_id, link="rx1")),
        (events.SUPERVISION_RESTORED, events.supervision_data(
            RECEIVER_LINK_FAILURE, "", alarm_id, link="rx1")),
    ]  # fmt: skip


def _fields(link: LinkSettings) -> dict[str, Any]:
    return {name: getattr(link, name) for name in receivers.SETTINGS}
