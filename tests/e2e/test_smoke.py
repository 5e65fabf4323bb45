"""The quickest end-to-end checks: a provisioned server accepts one signal and stores it, and the
installed entry point (``python -m alarmhub``, as a user runs it) answers, reads and fails as the
in-process ``cli`` helper of the other tests assumes (the driver it reads is added in-process:
only the process's own answers are the point here)."""

from __future__ import annotations

import json
from pathlib import Path

from alarmhub import __version__
from tests.support.processes import Station, cli, cli_json, cli_process


def test_signal_is_accepted_and_stored(station: Station) -> None:
    answer = station.post({"dnis": "1234", "panel": "0042", "code": "E130", "zone_or_user": "15"})
    assert answer.status_code == 200
    assert answer.json() == {"status_code": 200, "status": "success"}
    rows = cli_json(station.data_dir, "signal", "list", "--limit", "1")
    assert isinstance(rows, list)
    assert rows[0]["panel"] == "0042"
    assert rows[0]["zone"] == "015"


def test_the_entry_point_runs_commands_as_a_user_would(tmp_path: Path) -> None:
    assert cli_process(tmp_path, "--version").stdout.strip().endswith(__version__)
    assert "pending" in cli_process(tmp_path, "--help").stdout
    cli(tmp_path, "driver", "add", "rx1")
    drivers = json.loads(cli_process(tmp_path, "driver", "list", "--json").stdout)
    assert [driver["name"] for driver in drivers] == ["rx1"]
    refused = cli_process(tmp_path, "driver", "add", "rx1", check=False)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("error: ")
    assert len(refused.stderr.strip().splitlines()) == 1
