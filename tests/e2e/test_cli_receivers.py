"""``alarmhub receiver``: links and their lines added, listed and removed through the command
line (in process), every invalid setting refused with one ``error:`` line and status 1, and
``receiver list --json`` giving each link's settings and state."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from alarmhub.cli import main
from alarmhub.cli.receivers import receiver_group, receiver_line
from alarmhub.store import receivers
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.receivers import LinkReport
from tests.support.store_station import T0

NOT_HERE = {"ALARMHUB_DATABASE_URL": None, "ALARMHUB_SECRET_KEY": None}


def run(data_dir: Path, *args: str) -> Result:
    env = {**NOT_HERE, "ALARMHUB_DATA_DIR": str(data_dir)}
    return CliRunner().invoke(main, list(args), env=env)


def ok(data_dir: Path, *args: str) -> str:
    answer = run(data_dir, *args)
    assert answer.exit_code == 0, (args, answer.stderr)
    return answer.stdout


def listed(data_dir: Path, *args: str) -> list[dict[str, object]]:
    found: list[dict[str, object]] = json.loads(ok(data_dir, *args, "--json"))
    return found


def test_links_and_lines_are_added_listed_and_removed(tmp_path: Path) -> None:
    ok(tmp_path, "receiver", "add", "rx1", "--protocol", "surgard", "--listen", "0.0.0.0:1025")
    ok(tmp_path, "receiver", "add", "mx", "--protocol", "ademco685", "--serial", "/dev/ttyS0",
       "--baud", "19200", "--framing", "7e1", "--line-digits", "3",
       "--heartbeat-timeout", "30")  # fmt: skip
    ok(tmp_path, "receiver", "add", "d6", "--protocol", "d6500", "--connect", "[::1]:7000")
    ok(tmp_path, "receiver", "line", "add", "rx1", "--receiver", "01", "--line", "001",
       "--dnis", "D1")  # fmt: skip
    ok(tmp_path, "receiver", "line", "add", "mx", "--receiver", "2", "--line", "12",
       "--dnis", "D2")  # fmt: skip

    links = {link["name"]: link for link in listed(tmp_path, "receiver", "list")}
    assert list(links) == ["d6", "mx", "rx1"]
    assert links["rx1"] == {
        "name": "rx1", "protocol": "surgard", "transport": "listen", "address": "0.0.0.0:1025",
        "baud": None, "framing": None, "line_digits": 1, "heartbeat_timeout": 90,
        "state": "idle", "last_seen": None, "last_frame": None, "held_by": None,
        "frames": 0, "acks": 0, "naks": 0, "unreadable": 0, "per_minute": 0, "lines": 1,
        "alarm_id": None,
    }  # fmt: skip
    assert {k: links["mx"][k] for k in ("transport", "address", "baud", "framing",
                                        "line_digits", "heartbeat_timeout")} == {
        "transport": "serial", "address": "/dev/ttyS0", "baud": 19200, "framing": "7E1",
        "line_digits": 3, "heartbeat_timeout": 30,
    }  # fmt: skip
    assert (links["d6"]["transport"], links["d6"]["address"]) == ("connect", "[::1]:7000")
    assert listed(tmp_path, "receiver", "line", "list", "rx1") == [
        {"link": "rx1", "receiver": 1, "line": 1, "dnis": "D1"}
    ]
    assert len(listed(tmp_path, "receiver", "line", "list")) == 2
    assert "rx1" in ok(tmp_path, "receiver", "list")  # the table

    # the node's report shows: failed while failed_us is set, last seen as ISO 8601 UTC
    engine = open_engine(f"sqlite:///{tmp_path / 'alarmhub.db'}")
    with write_transaction(engine) as conn:
        report = LinkReport("rx1", "failed", "node-a", T0, "1011@", 5, 4, 1, 0, 2)
        receivers.report(conn, [report], T0)
    engine.dispose()
    rx1 = listed(tmp_path, "receiver", "list")[2]
    assert {k: rx1[k] for k in ("state", "last_seen", "held_by", "frames", "naks")} == {
        "state": "failed", "last_seen": "2027-01-15T08:00:00Z", "held_by": "node-a",
        "frames": 5, "naks": 1,
    }  # fmt: skip

    ok(tmp_path, "receiver", "line", "remove", "rx1", "--receiver", "1", "--line", "01")
    assert listed(tmp_path, "receiver", "line", "list", "rx1") == []
    ok(tmp_path, "receiver", "remove", "mx")
    assert [link["name"] for link in listed(tmp_path, "receiver", "list")] == ["d6", "rx1"]
    assert listed(tmp_path, "receiver", "line", "list") == []

    for args, error in [
        (("add", "rx1", "--protocol", "surgard", "--listen", ":1026"),
         "receiver link 'rx1' exists"),
        (("remove", "mx"), "no receiver link 'mx'"),
        (("line", "add", "mx", "--receiver", "1", "--line", "1", "--dnis", "D1"),
         "no receiver link 'mx'"),
        (("line", "add", "d6", "--receiver", "1", "--line", "1", "--dnis", "000"),
         "invalid dnis '000': must be 1-5 letters or digits, not all zeros"),
        (("line", "remove", "rx1", "--receiver", "1", "--line", "1"),
         "rx1 receiver 1 line 1 is not mapped"),
        (("line", "list", "mx"), "no receiver link 'mx'"),
    ]:  # fmt: skip
        answer = run(tmp_path, "receiver", *args)
        assert (answer.exit_code, answer.stderr) == (1, f"error: {error}\n"), args


ADD = ("receiver", "add", "rx1", "--protocol", "surgard")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("receiver", "add", "rx 1", "--protocol", "surgard", "--listen", ":1"),
         "invalid link name 'rx 1': must be 1-32 letters, digits, '-' or '_'"),
        (("receiver", "add", "r" * 33, "--protocol", "surgard", "--listen", ":1"),
         f"invalid link name '{'r' * 33}': must be 1-32 letters, digits, '-' or '_'"),
        (("receiver", "add", "rx1", "--protocol", "sia", "--listen", ":1"),
         "invalid protocol 'sia': must be one of surgard, ademco685, d6500"),
        (ADD, "give exactly one of --listen HOST:PORT, --connect HOST:PORT and --serial DEVICE"),
        ((*ADD, "--listen", ":1", "--serial", "/dev/ttyS0"),
         "give exactly one of --listen HOST:PORT, --connect HOST:PORT and --serial DEVICE"),
        ((*ADD, "--listen", "1025"), "--listen: '1025' is not HOST:PORT"),
        ((*ADD, "--connect", "host:99999"), "--connect: 'host:99999' is not HOST:PORT"),
        ((*ADD, "--connect", "host:0"), "--connect: 'host:0' needs a port from 1 to 65535"),
        ((*ADD, "--listen", ":1", "--baud", "9600"),
         "--baud and --framing are for --serial links only"),
        ((*ADD, "--connect", "h:1", "--framing", "8N1"),
         "--baud and --framing are for --serial links only"),
        ((*ADD, "--serial", "/dev/ttyS0", "--baud", "1234"),
         "invalid baud 1234: must be one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200"),
        ((*ADD, "--serial", "/dev/ttyS0", "--baud", "fast"),
         "--baud must be a whole number, not 'fast'"),
        ((*ADD, "--serial", "/dev/ttyS0", "--framing", "8E2"),
         "invalid framing '8E2': must be one of 8N1, 7E1"),
        ((*ADD, "--listen", ":1", "--line-digits", "4"), "invalid line digits 4: must be 1-3"),
        ((*ADD, "--listen", ":1", "--heartbeat-timeout", "9"),
         "invalid heartbeat timeout 9: must be 10-3600 seconds"),
        ((*ADD, "--listen", ":1", "--heartbeat-timeout", "3601"),
         "invalid heartbeat timeout 3601: must be 10-3600 seconds"),
        (("receiver", "line", "add", "rx1", "--receiver", "100", "--line", "1", "--dnis", "D1"),
         "invalid receiver '100': must be a number from 0 to 99"),
        (("receiver", "line", "add", "rx1", "--receiver", "1", "--line", "1x", "--dnis", "D1"),
         "invalid line '1x': must be a number from 0 to 999"),
    ],
)  # fmt: skip
def test_an_invalid_setting_is_one_error_line_and_status_1(
    tmp_path: Path, args: tuple[str, ...], error: str
) -> None:
    answer = run(tmp_path / "var", *args)
    assert (answer.exit_code, answer.stdout, answer.stderr) == (1, "", f"error: {error}\n")
    assert not (tmp_path / "var").exists()  # refused before the station is opened


def test_every_receiver_command_and_option_has_help() -> None:
    commands = [receiver_group, *receiver_group.commands.values(), *receiver_line.commands.values()]
    assert len(commands) == 8
    for command in commands:
        assert command.help, command.name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, (command.name, param.name)
