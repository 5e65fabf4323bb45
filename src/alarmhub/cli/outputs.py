"""Automation outputs: ``output add``, ``list`` and ``remove`` (decisions section 12). A running
node sends each output what alarmhub commits, as a Sur-Gard receiver does, from what these
store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from alarmhub.cli.links import host_port as _host_port
from alarmhub.cli.links import read as _read
from alarmhub.cli.links import whole as _whole
from alarmhub.cli.links import write as _write
from alarmhub.cli.output import (
    CommandError,
    data_dir_option,
    emit,
    json_option,
    provisioning_errors,
    table,
)
from alarmhub.clock import now_us
from alarmhub.core.outputs import (
    ACK_TIMEOUT_MAX_SECONDS,
    ACK_TIMEOUT_SECONDS,
    CONNECT,
    FAILURE_SECONDS,
    HEARTBEAT_MAX_SECONDS,
    HEARTBEAT_SECONDS,
    LINE_DEFAULT,
    LINE_DIGITS_DEFAULT,
    LISTEN,
    PROTOCOLS,
    RECEIVER_DEFAULT,
    RETENTION_HOURS_DEFAULT,
    SERIAL,
    OutputSettings,
    name_problem,
    output_problem,
)
from alarmhub.core.receiver_links import (
    BAUDS,
    DEFAULT_BAUD,
    DEFAULT_FRAMING,
    FRAMINGS,
    LINE_MAX,
    RECEIVER_MAX,
    line_number,
)
from alarmhub.core.units import iso_utc

if TYPE_CHECKING:
    from sqlalchemy import Connection

LIST_COLUMNS = [("name", "NAME"), ("protocol", "PROTOCOL"), ("transport", "TRANSPORT"),
                ("address", "ADDRESS"), ("state", "STATE"), ("queued", "QUEUED"),
                ("oldest_queued_s", "OLDEST (S)"), ("stale", "STALE"), ("sent", "SENT"),
                ("resent", "RESENT"), ("naks", "NAKS"), ("timeouts", "TIMEOUTS"),
                ("last_delivered", "LAST DELIVERED"), ("held_by", "HELD BY")]  # fmt: skip


def _checked_name(name: str) -> str:
    problem = name_problem(name)
    if problem:
        raise CommandError(problem)
    return name


def _seconds(value: str | None) -> float:
    if value is None:
        return ACK_TIMEOUT_SECONDS
    try:
        return float(value)
    except ValueError:
        raise CommandError(f"--ack-timeout must be a number of seconds, not {value!r}") from None


def _number(value: str | None, what: str, default: int) -> int:
    if value is None:
        return default
    try:
        return line_number(value, what)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _transport(
    connect: str | None, backups: tuple[str, ...], listen: str | None, serial: str | None
) -> tuple[str, tuple[str, ...]]:
    given = [(t, v) for t, v in ((CONNECT, connect), (LISTEN, listen), (SERIAL, serial)) if v]
    if len(given) != 1:
        raise CommandError("give exactly one of --connect HOST:PORT, --listen HOST:PORT and "
                           "--serial DEVICE")  # fmt: skip
    transport, address = given[0]
    if backups and transport != CONNECT:
        raise CommandError("--backup is for --connect outputs only")
    if transport == SERIAL:
        return transport, (address,)
    primary = _host_port(address, f"--{transport}")
    return transport, (primary, *(_host_port(b, "--backup") for b in backups))


def shown_output(row: dict[str, Any]) -> dict[str, Any]:
    """An output as ``output list`` shows it: its settings, its sending node's report (times
    in ISO 8601 UTC) and its queue."""
    return {
        **{k: v for k, v in row.items() if not k.endswith("_us")},
        "address": row["address"] or row["addresses"][0],
        "last_sent": _iso(row["last_sent_us"]),
        "last_delivered": _iso(row["last_delivered_us"]),
        "failing_since": _iso(row["failing_since_us"]),
        "reported": _iso(row["reported_us"]),
    }


def _iso(us: int | None) -> str | None:
    return None if us is None else iso_utc(us)


@click.group("output")
def output_group() -> None:
    """Automation outputs: alarmhub sends what it commits to another automation system (or
    another station) as a Sur-Gard receiver does."""


ADD_HELP = (
    "Add an output NAME (1-40 letters, digits, '-', '_'): every stored signal of the accounts "
    "it wants, in commit order, one frame at a time, each sent again until ACKed. AUTOMATION "
    f"OUTPUT FAILURE after {FAILURE_SECONDS} s without delivery; frames queued longer than "
    f"{RETENTION_HOURS_DEFAULT} h are kept (counted as stale)."
)


@output_group.command("add", help=ADD_HELP)
@click.argument("name", metavar="NAME")
@click.option("--protocol", required=True, metavar="|".join(PROTOCOLS),
              help="The receiver protocol the automation reads.")  # fmt: skip
@click.option("--connect", metavar="HOST:PORT",
              help="Connect to the automation's receiver input here.")  # fmt: skip
@click.option("--backup", metavar="HOST:PORT", multiple=True,
              help="A backup address of --connect, tried in turn after 4 unanswered tries of a "
              "frame (repeatable).")  # fmt: skip
@click.option("--listen", metavar="HOST:PORT",
              help="Listen here: the automation connects to alarmhub.")  # fmt: skip
@click.option("--serial", metavar="DEVICE", help="Send on this serial port.")
@click.option("--baud", metavar="N",
              help=f"Serial speed: one of {', '.join(map(str, BAUDS))} "
              f"(default {DEFAULT_BAUD}; --serial only).")  # fmt: skip
@click.option("--framing", metavar="|".join(FRAMINGS),
              help=f"Serial data bits, parity, stop bits (default {DEFAULT_FRAMING}; "
              "--serial only).")  # fmt: skip
@click.option("--accounts", metavar="PREFIX", multiple=True,
              help="Send only the signals of accounts starting with PREFIX (repeatable; "
              "default: every account).")  # fmt: skip
@click.option(
    "--receiver",
    metavar="RR",
    help=f"The frames' receiver number, 0-{RECEIVER_MAX} (default {RECEIVER_DEFAULT}).",
)
@click.option("--line", metavar="L",
              help=f"The frames' line number, 0-{LINE_MAX} within --line-digits "
              f"(default {LINE_DEFAULT}).")  # fmt: skip
@click.option("--line-digits", metavar="N",
              help="Digits of the line number in the frames' header: 1 (MLR2) to 3 "
              f"(System I-5); default {LINE_DIGITS_DEFAULT}.")  # fmt: skip
@click.option("--ack-timeout", metavar="SECONDS",
              help=f"Send a frame again when no ACK came within this long: more than 0, at "
              f"most {ACK_TIMEOUT_MAX_SECONDS:g} (default {ACK_TIMEOUT_SECONDS:g}).")  # fmt: skip
@click.option("--heartbeat-seconds", metavar="N",
              help=f"Send the link test after this long idle: 1-{HEARTBEAT_MAX_SECONDS} "
              f"(default {HEARTBEAT_SECONDS}).")  # fmt: skip
@data_dir_option
@json_option
@provisioning_errors
def output_add(
    name: str, protocol: str, connect: str | None, backup: tuple[str, ...], listen: str | None,
    serial: str | None, baud: str | None, framing: str | None, accounts: tuple[str, ...],
    receiver: str | None, line: str | None, line_digits: str | None, ack_timeout: str | None,
    heartbeat_seconds: str | None, data_dir: Path | None, as_json: bool,
) -> None:  # fmt: skip
    from alarmhub.store import outputs

    _checked_name(name)
    transport, addresses = _transport(connect, backup, listen, serial)
    if transport != SERIAL and (baud is not None or framing is not None):
        raise CommandError("--baud and --framing are for --serial outputs only")
    settings = OutputSettings(
        output_id=0,
        name=name,
        protocol=protocol,
        transport=transport,
        addresses=addresses,
        baud=_whole(baud, "--baud", DEFAULT_BAUD) if transport == SERIAL else None,
        framing=(framing or DEFAULT_FRAMING).upper() if transport == SERIAL else None,
        accounts=tuple(dict.fromkeys(accounts)),
        receiver=_number(receiver, "receiver", RECEIVER_DEFAULT),
        line=_number(line, "line", LINE_DEFAULT),
        line_digits=_whole(line_digits, "--line-digits", LINE_DIGITS_DEFAULT),
        ack_timeout_seconds=_seconds(ack_timeout),
        heartbeat_seconds=_whole(heartbeat_seconds, "--heartbeat-seconds", HEARTBEAT_SECONDS),
    )
    problem = output_problem(settings)
    if problem:
        raise CommandError(problem)
    _write(data_dir, lambda conn: outputs.add(conn, settings, now_us()))
    shown = {"name": name, "protocol": protocol, "transport": transport,
             "addresses": list(addresses), "baud": settings.baud, "framing": settings.framing,
             "accounts": list(settings.accounts), "receiver": settings.receiver,
             "line": settings.line, "line_digits": settings.line_digits,
             "ack_timeout_seconds": settings.ack_timeout_seconds,
             "heartbeat_seconds": settings.heartbeat_seconds}  # fmt: skip
    serial_port = f" {settings.baud} {settings.framing}" if transport == SERIAL else ""
    wants = " ".join(settings.accounts) if settings.accounts else "every account"
    emit(
        as_json,
        shown,
        lambda: click.echo(
            f"output {name} added: {protocol}, {transport} {', '.join(addresses)}"
            f"{serial_port}; {wants}"
        ),
    )


@output_group.command("list")
@data_dir_option
@json_option
def output_list(data_dir: Path | None, as_json: bool) -> None:
    """List the outputs: settings, state (idle before its node reports, up, down, failed), the
    address in use, frames queued (committed, not yet ACKed), the oldest one's age, those
    stale, frames sent and sent again, NAKs and time-outs, the last delivery (UTC), the node
    sending it."""
    from alarmhub.store import outputs

    found = _read(data_dir, lambda conn: outputs.list_outputs(conn, now_us()))
    rows = [shown_output(row) for row in found]
    emit(as_json, rows, lambda: table(rows, LIST_COLUMNS, "no output"))


@output_group.command("remove")
@click.argument("name", metavar="NAME")
@click.option("--force", is_flag=True, help="Remove it even with frames still to send (dropped).")
@data_dir_option
@json_option
@provisioning_errors
def output_remove(name: str, force: bool, data_dir: Path | None, as_json: bool) -> None:
    """Remove the output NAME (a running node stops it). An output with frames still to send
    is removed only with --force: they are dropped."""
    from alarmhub.store import outputs

    _checked_name(name)

    def remove(conn: Connection) -> int:
        waiting = outputs.queued(conn, name)
        if waiting is None:
            raise CommandError(f"no output {name!r}")
        if waiting and not force:
            raise CommandError(
                f"output {name} has {waiting} frame(s) not yet delivered: "
                "--force removes it and drops them"
            )
        outputs.remove(conn, name)
        return waiting

    dropped = _write(data_dir, remove)
    emit(
        as_json,
        {"name": name, "removed": True, "dropped": dropped},
        lambda: click.echo(
            f"output {name} removed" + (f", {dropped} frame(s) dropped" if dropped else "")
        ),
    )


@output_group.command("test")
@click.argument("name", metavar="NAME")
@data_dir_option
@json_option
@provisioning_errors
def output_test(name: str, data_dir: Path | None, as_json: bool) -> None:
    """Send the output NAME one link test now, from this command (not through a node), and
    print the answer: ACK, NAK, no answer within its ACK time-out, or why no connection could
    be had (a listen output waits for the automation to connect; while a node listens on the
    same address, stop it first). Exits 1 unless the answer is ACK."""
    import asyncio

    from alarmhub.outbound.automation import link_test
    from alarmhub.store import outputs

    _checked_name(name)
    found = _read(data_dir, outputs.settings)
    settings = next((s for s in found if s.name == name), None)
    if settings is None:
        raise CommandError(f"no output {name!r}")
    answer = asyncio.run(link_test(settings))
    emit(
        as_json,
        {"name": name, "answer": answer, "ok": answer == "ACK"},
        lambda: click.echo(f"output {name}: {answer}"),
    )
    if answer != "ACK":
        raise SystemExit(1)
