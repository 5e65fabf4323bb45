"""A Sur-Gard receiver on a serial line (a socat pty pair) to a real node: each Contact ID frame
ACKed, and its alarm in pending with the zone's description, through the line's dnis and mask."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import receiver_station as station
from tests.support.database import db_rows
from tests.support.processes import Server, wait_for
from tests.support.pty_pair import pty_pair
from tests.support.receiver_sim import ReceiverSim, SerialPort, Settings

pytestmark = [pytest.mark.backends("sqlite", "postgresql"), pytest.mark.long]


def test_contact_id_frames_over_a_serial_line_reach_pending(backend: str, tmp_path: Path) -> None:
    station.provision(tmp_path)
    with pty_pair(tmp_path) as (node_end, receiver_end):
        station.add_link(tmp_path, "mlr2", "--serial", str(node_end), "--baud", "9600")
        server = Server(tmp_path).start()
        sim = ReceiverSim(SerialPort(str(receiver_end), 9600), Settings(link_test_every=5))
        try:
            sim.start()
            sent = sim.send(
                station.contact_id(code, zone) for code, zone in (("E130", "015"), ("E130", "016"))
            )
            assert sim.wait_drained(60), f"not all ACKed: {sent}\n{server.log()[-3000:]}"
            assert all(d.acked and not d.naks for d in sent)

            def pending() -> list[dict[str, object]]:
                rows = db_rows(
                    tmp_path,
                    "SELECT * FROM alarm WHERE account_number = ? AND state = 'pending'"
                    " ORDER BY zone",
                    station.ACCOUNT,
                )
                return [dict(r) for r in rows] if len(rows) == 2 else []

            alarms = wait_for(pending, "both burglaries in pending")
            for alarm, (zone, description) in zip(alarms, station.ZONES.items(), strict=True):
                assert (alarm["code"], alarm["zone"], alarm["dnis"]) == ("E130", zone, station.DNIS)
                assert description in str(alarm["hist_text"])
        finally:
            sim.stop()
            assert server.stop() == 0
        log = server.log()
        assert "Traceback" not in log, log[-3000:]
