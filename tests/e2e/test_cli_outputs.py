"""``alarmhub output``: automation outputs added, listed and removed through the command line
(in process), every invalid setting refused with one ``error:`` line and status 1, ``output
list --json`` giving each output's settings, state and queue, and ``output remove`` of an
output with frames still to send asking for ``--force``."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from alarmhub.cli import main
from alarmhub.cli.outputs import output_group
from alarmhub.core.outputs import OutputReport
from alarmhub.store import outputs
from alarmhub.store.engine import open_engine, write_transaction

T0 = 1_700_000_000_000_000  # 2023-11-14 22:13:20 UTC: its frames are stale
NOT_HERE = {"ALARMHUB_DATABASE_URL": None, "ALARMHUB_SECRET_KEY": None}


def run(data_dir: Path, *args: str) -> Result:
    env = {**NOT_HERE, "ALARMHUB_DATA_DIR": str(data_dir)}
    return CliRunner().invoke(main, list(args), env=env)


def ok(data_dir: Path, *args: str) -> str:
    answer = run(data_dir, *args)
    assert answer.exit_code == 0, (args, answer.stderr)
    return answer.stdout


def listed(data_dir: Path) -> dict[str, dict[str, object]]:
    found = json.loads(ok(data_dir, "output", "list", "--json"))
    return {row["name"]: row for row in found}


def test_outputs_are_added_listed_and_removed(tmp_path: Path) -> None:
    assert ok(tmp_path, "output", "add", "auto", "--protocol", "surgard", "--connect",
              "10.0.0.1:1025", "--backup", "10.0.0.2:1025", "--backup", "[::1]:1025",
              "--accounts", "70", "--accounts", "80") == (
        "output auto added: surgard, connect 10.0.0.1:1025, 10.0.0.2:1025, [::1]:1025; 70 80\n"
    )  # fmt: skip
    ok(tmp_path, "output", "add", "com1", "--protocol", "surgard", "--serial", "/dev/ttyS0",
       "--baud", "19200", "--framing", "7e1", "--receiver", "12", "--line", "100",
       "--line-digits", "3", "--ack-timeout", "9.5", "--heartbeat-seconds", "60")  # fmt: skip
    ok(tmp_path, "output", "add", "in", "--protocol", "surgard", "--listen", ":1026")

    shown = listed(tmp_path)
    assert list(shown) == ["auto", "com1", "in"]
    assert shown["auto"] == {
        "name": "auto", "protocol": "surgard", "transport": "connect",
        "addresses": ["10.0.0.1:1025", "10.0.0.2:1025", "[::1]:1025"], "baud": None,
        "framing": None, "accounts": ["70", "80"], "receiver": 1, "line": 1, "line_digits": 1,
        "ack_timeout_seconds": 4.0, "heartbeat_seconds": 30, "state": "idle",
        "address": "10.0.0.1:1025", "queued": 0, "oldest_queued_s": None, "stale": 0,
        "sent": 0, "resent": 0, "acks": 0, "naks": 0, "timeouts": 0, "held_by": None,
        "alarm_id": None, "last_sent": None, "last_delivered": None, "failing_since": None,
        "reported": None,
    }  # fmt: skip
    assert {k: shown["com1"][k] for k in ("transport", "addresses", "baud", "framing",
                                          "receiver", "line", "line_digits",
                                          "ack_timeout_seconds", "heartbeat_seconds")} == {
        "transport": "serial", "addresses": ["/dev/ttyS0"], "baud": 19200, "framing": "7E1",
        "receiver": 12, "line": 100, "line_digits": 3, "ack_timeout_seconds": 9.5,
        "heartbeat_seconds": 60,
    }  # fmt: skip
    assert (shown["in"]["addresses"], shown["in"]["accounts"]) == (["127.0.0.1:1026"], [])
    assert "auto" in ok(tmp_path, "output", "list")  # the table

    # frames waiting and the sender's report show; remove then needs --force
    engine = open_engine(f"sqlite:///{tmp_path / 'alarmhub.db'}")
    with write_transaction(engine) as conn:
        outputs.enqueue_event(conn, "700012", "12", "E350", "00", "000", T0)
        outputs.enqueue_event(conn, "700012", "12", "R350", "00", "000", T0)
        outputs.enqueue_event(conn, "900001", "1", "E350", "00", "000", T0)  # not for auto
        auto = next(o for o in outputs.settings(conn) if o.name == "auto")
        report = OutputReport("down", "10.0.0.2:1025", 3, 2, 1, 1, 1, T0, T0, T0, "node-a")
        outputs.report(conn, auto.output_id, report, T0)
    engine.dispose()
    auto_shown = listed(tmp_path)["auto"]
    assert {k: auto_shown[k] for k in ("state", "address", "queued", "stale", "held_by",
                                       "last_delivered", "failing_since", "resent")} == {
        "state": "down", "address": "10.0.0.2:1025", "queued": 2, "stale": 2,
        "held_by": "node-a", "last_delivered": "2023-11-14T22:13:20Z",
        "failing_since": "2023-11-14T22:13:20Z", "resent": 2,
    }  # fmt: skip

    answer = run(tmp_path, "output", "remove", "auto")
    assert (answer.exit_code, answer.stderr) == (
        1, "error: output auto has 2 frame(s) not yet delivered: --force removes it and drops "
        "them\n")  # fmt: skip
    assert "auto" in listed(tmp_path)
    assert ok(tmp_path, "output", "remove", "auto", "--force") == (
        "output auto removed, 2 frame(s) dropped\n"
    )
    assert json.loads(ok(tmp_path, "output", "remove", "in", "--force", "--json")) == {
        "name": "in", "removed": True, "dropped": 3
    }  # fmt: skip
    ok(tmp_path, "output", "add", "spare", "--protocol", "surgard", "--listen", ":1028")
    assert ok(tmp_path, "output", "remove", "spare") == "output spare removed\n"  # none queued
    assert list(listed(tmp_path)) == ["com1"]

    for args, error in [
        (("add", "com1", "--protocol", "surgard", "--listen", ":1027"), "output 'com1' exists"),
        (("remove", "auto"), "no output 'auto'"),
    ]:
        answer = run(tmp_path, "output", *args)
        assert (answer.exit_code, answer.stderr) == (1, f"error: {error}\n"), args


ADD = ("output", "add", "auto", "--protocol", "surgard")
ONE_OF = "give exactly one of --connect HOST:PORT, --listen HOST:PORT and --serial DEVICE"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("output", "add", "a b", "--protocol", "surgard", "--listen", ":1"),
         "invalid output name 'a b': must be 1-40 letters, digits, '-' or '_'"),
        (("output", "add", "o" * 41, "--protocol", "surgard", "--listen", ":1"),
         f"invalid output name '{'o' * 41}': must be 1-40 letters, digits, '-' or '_'"),
        (("output", "add", "auto", "--protocol", "sia", "--listen", ":1"),
         "invalid protocol 'sia': must be one of surgard"),
        (ADD, ONE_OF),
        ((*ADD, "--listen", ":1", "--connect", "h:1"), ONE_OF),
        ((*ADD, "--listen", ":1", "--backup", "h:2"), "--backup is for --connect outputs only"),
        ((*ADD, "--serial", "/dev/ttyS0", "--backup", "h:2"),
         "--backup is for --connect outputs only"),
        ((*ADD, "--connect", "h:1", "--backup", "h"), "--backup: 'h' is not HOST:PORT"),
        ((*ADD, "--connect", "host:0"), "--connect: 'host:0' needs a port from 1 to 65535"),
        ((*ADD, "--listen", "1025"), "--listen: '1025' is not HOST:PORT"),
        ((*ADD, "--connect", "h:1", "--baud", "9600"),
         "--baud and --framing are for --serial outputs only"),
        ((*ADD, "--serial", "/dev/ttyS0", "--baud", "1234"),
         "invalid baud 1234: must be one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200"),
        ((*ADD, "--serial", "/dev/ttyS0", "--framing", "8E2"),
         "invalid framing '8E2': must be one of 8N1, 7E1"),
        ((*ADD, "--listen", ":1", "--accounts", "7 0"),
         "invalid account prefix '7 0': account number must be printable ASCII without spaces"),
        ((*ADD, "--listen", ":1", "--receiver", "100"),
         "invalid receiver '100': must be a number from 0 to 99"),
        ((*ADD, "--listen", ":1", "--line", "1x"),
         "invalid line '1x': must be a number from 0 to 999"),
        ((*ADD, "--listen", ":1", "--line", "12"), "invalid line 12: does not fit 1 digit(s)"),
        ((*ADD, "--listen", ":1", "--line-digits", "4"), "invalid line digits 4: must be 1-3"),
        ((*ADD, "--listen", ":1", "--ack-timeout", "0"),
         "invalid ack timeout 0: must be more than 0 seconds (from 0.001 to 3600)"),
        ((*ADD, "--listen", ":1", "--ack-timeout", "soon"),
         "--ack-timeout must be a number of seconds, not 'soon'"),
        ((*ADD, "--listen", ":1", "--heartbeat-seconds", "0"),
         "invalid heartbeat 0: must be 1 to 86400 seconds"),
        ((*ADD, "--listen", ":1", "--heartbeat-seconds", "1.5"),
         "--heartbeat-seconds must be a whole number, not '1.5'"),
        (("output", "remove", "a b"),
         "invalid output name 'a b': must be 1-40 letters, digits, '-' or '_'"),
    ],
)  # fmt: skip
def test_an_invalid_setting_is_one_error_line_and_status_1(
    tmp_path: Path, args: tuple[str, ...], error: str
) -> None:
    answer = run(tmp_path / "var", *args)
    assert (answer.exit_code, answer.stdout, answer.stderr) == (1, "", f"error: {error}\n")
    assert not (tmp_path / "var").exists()  # refused before the station is opened


def test_every_output_command_and_option_has_help() -> None:
    commands = [output_group, *output_group.commands.values()]
    assert sorted(output_group.commands) == ["add", "list", "remove", "test"]
    for command in commands:
        assert command.help, command.name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, (command.name, param.name)
