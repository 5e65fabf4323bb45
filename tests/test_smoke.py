"""The quickest end-to-end check: a provisioned server accepts one signal and stores it."""

from __future__ import annotations

from tests.conftest import Station, cli_json


def test_signal_is_accepted_and_stored(station: Station) -> None:
    answer = station.post({"dnis": "1234", "panel": "0042", "code": "E130", "zone_or_user": "15"})
    assert answer.status_code == 200
    assert answer.json() == {"status_code": 200, "status": "success"}
    rows = cli_json(station.data_dir, "signal", "list", "--limit", "1")
    assert isinstance(rows, list)
    assert rows[0]["panel"] == "0042"
    assert rows[0]["zone"] == "015"
