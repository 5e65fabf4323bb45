"""Notifications through the command line (decisions section 13), on both databases: the gateways
(passwords only from the environment, never in ``notify status``, its output or any file of the
station in clear), the templates (checked, shown, reset), contacts' subscriptions (checked
addresses; ``contact list --json`` shows them) and ``notify log``.

The commands run in this process (``cli``), except the two that are handed a password: those run
as a user runs them (a real ``python -m alarmhub`` process with the password in its environment),
so that nothing the process prints, the interpreter's own output included, shows it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest

from alarmhub.cli.contacts import contact_group
from alarmhub.cli.notify import notify_group
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store.commit import SignalInsert, commit_signals
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.routing import SignalRouting
from tests.support.database import database_url
from tests.support.processes import as_dict, as_list, cli, cli_json, cli_process
from tests.support.store_station import SECOND, T0

pytestmark = pytest.mark.backends("sqlite", "postgresql")

SMTP_SECRET = "smtp-Secret-4711"
SMS_SECRET = "sms-Token-0815"
ENV = ("ALARMHUB_SMTP_USER", "ALARMHUB_SMTP_PASSWORD", "ALARMHUB_SMS_USER",
       "ALARMHUB_SMS_PASSWORD")  # fmt: skip


@pytest.fixture(autouse=True)
def no_secrets_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def fails(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def contact(data_dir: Path, *args: str, check: bool = True) -> Any:
    result = cli(data_dir, "contact", *args, "--json", check=check)
    return as_dict(json.loads(result.stdout)) if check else result


def files_hold(data_dir: Path, secret: str) -> list[Path]:
    """The station's files that hold ``secret`` in clear."""
    return [p for p in data_dir.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_gateways_take_their_secrets_from_the_environment_only(
    backend: str, tmp_path: Path
) -> None:
    cli(tmp_path, "account", "add", "A1", "--name", "Acme")
    # a user without the password in the environment is refused
    assert "ALARMHUB_SMTP_PASSWORD" in fails(
        cli(tmp_path, "notify", "smtp", "--url", "smtp://127.0.0.1:2525", "--user", "station",
            check=False)
    )  # fmt: skip
    assert "--password" not in cli(tmp_path, "notify", "smtp", "--help").stdout
    done = cli_process(
        tmp_path, "notify", "smtp", "--url", "smtp://127.0.0.1:2525", "--from",
        "alarms@example.com", "--starttls", "--user", "station",
        env={"ALARMHUB_SMTP_PASSWORD": SMTP_SECRET},
    )  # fmt: skip
    assert SMTP_SECRET not in done.stdout + done.stderr
    assert "ALARMHUB_SMS_PASSWORD" in fails(
        cli(tmp_path, "notify", "sms", "--url", "https://sms.example.com/send", check=False,
            env={"ALARMHUB_SMS_USER": "acct"})
    )  # fmt: skip
    done = cli_process(
        tmp_path, "notify", "sms", "--url", "https://sms.example.com/send", "--format", "json",
        "--from", "+15550000",
        env={"ALARMHUB_SMS_USER": "acct", "ALARMHUB_SMS_PASSWORD": SMS_SECRET},
    )  # fmt: skip
    assert SMS_SECRET not in done.stdout + done.stderr
    human = cli(tmp_path, "notify", "status").stdout
    shown = as_list(cli_json(tmp_path, "notify", "status"))
    for secret in (SMTP_SECRET, SMS_SECRET):
        assert secret not in human and secret not in json.dumps(shown)
        assert files_hold(tmp_path, secret) == []
    email, sms = shown
    assert (email["channel"], email["url"], email["tls"], email["from"], email["user"]) == (
        "email",
        "smtp://127.0.0.1:2525",
        "starttls",
        "alarms@example.com",
        "station",
    )
    assert (sms["format"], sms["user"], sms["has_password"]) == ("json", "acct", True)
    assert "smtp://127.0.0.1:2525" in human and "set" in human
    # implicit TLS
    cli(tmp_path, "notify", "smtp", "--url", "smtps://127.0.0.1:465")
    assert as_list(cli_json(tmp_path, "notify", "status"))[0]["tls"] == "implicit"
    assert "smtp://" in fails(
        cli(tmp_path, "notify", "smtp", "--url", "http://127.0.0.1", check=False)
    )


def test_templates_are_checked_shown_and_reset(backend: str, tmp_path: Path) -> None:
    cli(tmp_path, "account", "add", "A1", "--name", "Acme")
    shown = as_dict(cli_json(tmp_path, "notify", "template", "show", "alarm", "email"))
    assert (shown["subject"], shown["default"]) == ("$account $text", True)
    assert "unknown placeholder" in fails(
        cli(tmp_path, "notify", "template", "set", "alarm", "sms", "--body", "$account $secret",
            check=False)
    )  # fmt: skip
    cli(tmp_path, "notify", "template", "set", "alarm", "email", "--subject", "ALARM $account",
        "--body-file", "-", stdin="Alarm at $name:\n$text\n$time\n")  # fmt: skip
    shown = as_dict(cli_json(tmp_path, "notify", "template", "show", "alarm", "email"))
    assert (shown["subject"], shown["body"], shown["default"]) == (
        "ALARM $account", "Alarm at $name:\n$text\n$time\n", False)  # fmt: skip
    assert "the station's" in cli(tmp_path, "notify", "template", "show", "alarm", "email").stdout
    cli(tmp_path, "notify", "template", "reset", "alarm", "email")
    assert as_dict(cli_json(tmp_path, "notify", "template", "show", "alarm", "email"))["default"]
    wrong = cli(tmp_path, "notify", "template", "show", "alarm", "fax", check=False)
    assert wrong.returncode == 2 and "'fax' is not one of 'email', 'sms'" in wrong.stderr


def test_contacts_subscribe_and_the_log_lists_their_messages(backend: str, tmp_path: Path) -> None:
    cli(tmp_path, "dnis", "add", "D1", "--mask", "####")
    cli(tmp_path, "account", "add", "1234", "--name", "Acme")
    jane = contact(tmp_path, "add", "1234", "--name", "Jane", "--phone", "555-0100", "--email",
                   "jane@example.org", "--notify", "alarm", "--notify", "trouble",
                   "--notify-by", "email", "--notify-by", "sms")  # fmt: skip
    assert (jane["notify"], jane["notify_by"]) == (["alarm", "trouble"], ["email", "sms"])
    listed = as_list(cli_json(tmp_path, "contact", "list", "1234"))
    assert (listed[0]["email"], listed[0]["notify"], listed[0]["notify_by"]) == (
        "jane@example.org", ["alarm", "trouble"], ["email", "sms"])  # fmt: skip
    assert "alarm trouble by email sms" in cli(tmp_path, "contact", "list", "1234").stdout
    changed = contact(tmp_path, "update", "1234", str(jane["id"]), "--notify", "openclose")
    assert (changed["notify"], changed["notify_by"]) == (["openclose"], ["email", "sms"])
    # refused: a hostile or wrong address, e-mail without an address, SMS without a mobile
    for args in (("--email", "jane@example.org\r\nBcc: x@example.com"), ("--email", "jane"),
                 ("--email", "Jane <jane@example.org>")):  # fmt: skip
        assert fails(contact(tmp_path, "update", "1234", str(jane["id"]), *args, check=False))
    assert "e-mail address" in fails(contact(
        tmp_path, "add", "1234", "--name", "Al", "--notify", "alarm", "--notify-by", "email",
        check=False))  # fmt: skip
    assert "mobile" in fails(contact(
        tmp_path, "add", "1234", "--name", "Bo", "--phone", "home:555-0101", "--notify", "alarm",
        "--notify-by", "sms", check=False))  # fmt: skip
    assert "channel" in fails(contact(
        tmp_path, "add", "1234", "--name", "Cy", "--notify", "alarm", check=False))  # fmt: skip
    contact(tmp_path, "update", "1234", str(jane["id"]), "--notify", "alarm")
    route(tmp_path, "1234", "E130")
    logged = as_list(cli_json(tmp_path, "notify", "log", "--account", "1234"))
    assert [(m["channel"], m["to"], m["account"], m["state"], m["attempts"]) for m in logged] == [
        ("sms", "555-0100", "1234", "queued", 0), ("email", "jane@example.org", "1234", "queued", 0)
    ]  # fmt: skip
    assert "jane@example.org" in cli(tmp_path, "notify", "log").stdout
    assert as_list(cli_json(tmp_path, "notify", "log", "--account", "9999")) == []
    unsubscribed = contact(tmp_path, "update", "1234", str(jane["id"]), "--notify", "none")
    assert unsubscribed["notify"] == []


def route(data_dir: Path, panel: str, code: str) -> None:
    """One signal of line D1 committed and routed as a node does."""
    engine = open_engine(database_url(data_dir))
    try:
        signal = Signal("site", "rx", SignalFields("D1", panel, code, "01", "004"), "t", T0)
        with write_transaction(engine) as conn:
            commit_signals(conn, SignalInsert(engine), [signal], 3600 * SECOND)
        with write_transaction(engine) as conn:
            SignalRouting(engine, 1000, 2).route(conn, T0)
    finally:
        engine.dispose()


def test_the_contact_import_sets_subscriptions(backend: str, tmp_path: Path) -> None:
    cli(tmp_path, "account", "add", "A1", "--name", "Acme")
    path = tmp_path / "contacts.csv"
    path.write_text(
        "account,name,phone1,email,notify,notify_by\n"
        'A1,Jane,555-0100,jane@example.org,"alarm, trouble",email sms\n'
        "A1,Bob,,bob@example.org,openclose,\n"  # a kind without a channel
        'A1,Cy,,"cy@example.org\r\nBcc: x@example.org",alarm,email\n'
        "A1,Di,,,,\n"
    )
    result = cli(tmp_path, "contact", "import", str(path), "--json", check=False)
    assert result.returncode == 1
    refused = as_dict(json.loads(result.stdout))["refused"]
    assert [r["line"] for r in refused] == [3, 5], refused  # a record ends on line 5
    assert "channel" in str(refused[0]) and "control character" in str(refused[1])
    listed = {c["name"]: c for c in as_list(cli_json(tmp_path, "contact", "list", "A1"))}
    assert (listed["Jane"]["notify"], listed["Jane"]["notify_by"]) == (
        ["alarm", "trouble"], ["email", "sms"])  # fmt: skip
    assert (listed["Di"]["notify"], listed["Di"]["notify_by"]) == ([], [])
    assert set(listed) == {"Jane", "Di"}


def test_every_notify_command_and_option_has_help() -> None:
    commands: list[click.Command] = [notify_group]
    for command in commands:  # the groups' commands are added as they are met
        if isinstance(command, click.Group):
            commands.extend(command.commands.values())
    assert {c.name for c in commands} >= {"smtp", "sms", "status", "log", "show", "set", "reset"}
    for command in [*commands, contact_group.commands["add"], contact_group.commands["update"]]:
        assert command.help, command.name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, (command.name, param.name)
