"""Links to hardware receivers' automation outputs: ``receiver add``, ``list`` and ``remove``,
and the receiver lines each maps to a dnis (``receiver line add``, ``list``, ``remove``). A
running node starts, changes and stops its links from what these store (decisions section 11)."""

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
from alarmhub.core.receiver_links import (
    BAUDS,
    CONNECT,
    DEFAULT_BAUD,
    DEFAULT_FRAMING,
    DEFAULT_HEARTBEAT_TIMEOUT_S,
    DEFAULT_LINE_DIGITS,
    FRAMINGS,
    HEARTBEAT_TIMEOUT_MAX_S,
    HEARTBEAT_TIMEOUT_MIN_S,
    LINE_MAX,
    LISTEN,
    PROTOCOLS,
    RECEIVER_MAX,
    SERIAL,
    LinkSettings,
    line_number,
    link_problem,
    name_problem,
)
from alarmhub.core.units import iso_utc

if TYPE_CHECKING:
    from sqlalchemy import Connection

LIST_COLUMNS = [("name", "NAME"), ("protocol", "PROTOCOL"), ("transport", "TRANSPORT"),
                ("address", "ADDRESS"), ("state", "STATE"), ("last_seen", "LAST SEEN"),
                ("held_by", "HELD BY"), ("frames", "FRAMES"), ("naks", "NAKS"),
                ("unreadable", "UNREADABLE"), ("per_minute", "PER MINUTE"),
                ("lines", "LINES")]  # fmt: skip
LINE_COLUMNS = [("link", "LINK"), ("receiver", "RECEIVER"), ("line", "LINE"), ("dnis", "DNIS")]


def _checked_name(name: str) -> str:
    problem = name_problem(name)
    if problem:
        raise CommandError(problem)
    return name


def _numbers(receiver: str, line: str) -> tuple[int, int]:
    try:
        return line_number(receiver, "receiver"), line_number(line, "line")
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _transport(listen: str | None, connect: str | None, serial: str | None) -> tuple[str, str]:
    given = [(t, v) for t, v in ((LISTEN, listen), (CONNECT, connect), (SERIAL, serial)) if v]
    if len(given) != 1:
        raise CommandError("give exactly one of --listen HOST:PORT, --connect HOST:PORT and "
                           "--serial DEVICE")  # fmt: skip
    transport, address = given[0]
    if transport == SERIAL:
        return transport, address
    return transport, _host_port(address, f"--{transport}")


def shown_link(row: dict[str, Any]) -> dict[str, Any]:
    """A link as ``receiver list`` shows it: its settings and its holding node's report (state
    idle before the first frame, up, or failed, as the node last reported it)."""
    return {
        "name": row["name"],
        "protocol": row["protocol"],
        "transport": row["transport"],
        "address": row["address"],
        "baud": row["baud"],
        "framing": row["framing"],
        "line_digits": row["line_digits"],
        "heartbeat_timeout": row["heartbeat_timeout_s"],
        "state": row["state"],
        "last_seen": iso_utc(row["last_seen_us"]) if row["last_seen_us"] is not None else None,
        "last_frame": row["last_frame"],
        "held_by": row["held_by"],
        "frames": row["frames"],
        "acks": row["acks"],
        "naks": row["naks"],
        "unreadable": row["unreadable"],
        "per_minute": row["per_minute"],
        "lines": row["lines"],
        "alarm_id": row["alarm_id"],
    }


@click.group("receiver")
def receiver_group() -> None:
    """Links to hardware receivers' automation outputs (Sur-Gard, Ademco 685, Bosch D6500)."""


@receiver_group.command("add")
@click.argument("name", metavar="NAME")
@click.option(
    "--protocol",
    required=True,
    metavar="|".join(PROTOCOLS),
    help="The receiver's automation output format.",
)
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Listen here: the receiver (or its terminal server) connects to alarmhub.",
)
@click.option(
    "--connect",
    metavar="HOST:PORT",
    help="Connect to the receiver (or its terminal "
    "server) here, and again within 5 s when the connection drops.",
)
@click.option("--serial", metavar="DEVICE", help="Read the receiver on this serial port.")
@click.option(
    "--baud",
    metavar="N",
    help=f"Serial speed: one of {', '.join(map(str, BAUDS))} "
    f"(default {DEFAULT_BAUD}; --serial only).",
)
@click.option(
    "--framing",
    metavar="|".join(FRAMINGS),
    help=f"Serial data bits, parity, stop bits (default {DEFAULT_FRAMING}; --serial only).",
)
@click.option(
    "--line-digits",
    metavar="N",
    help="Digits of the line number in a Sur-Gard "
    f"header: 1 (MLR2) to 3 (System I-5); default {DEFAULT_LINE_DIGITS}.",
)
@click.option(
    "--heartbeat-timeout",
    metavar="SECONDS",
    help="RECEIVER LINK FAILURE after this "
    f"long with no frame and no link test: {HEARTBEAT_TIMEOUT_MIN_S}-"
    f"{HEARTBEAT_TIMEOUT_MAX_S}, default {DEFAULT_HEARTBEAT_TIMEOUT_S}.",
)
@data_dir_option
@json_option
@provisioning_errors
def receiver_add(
    name: str, protocol: str, listen: str | None, connect: str | None, serial: str | None,
    baud: str | None, framing: str | None, line_digits: str | None,
    heartbeat_timeout: str | None, data_dir: Path | None, as_json: bool,
) -> None:  # fmt: skip
    """Add a link NAME (1-32 letters, digits, '-', '_') to a receiver's automation output."""
    from alarmhub.store import receivers

    transport, address = _transport(listen, connect, serial)
    if transport != SERIAL and (baud is not None or framing is not None):
        raise CommandError("--baud and --framing are for --serial links only")
    link = LinkSettings(
        name=name,
        protocol=protocol,
        transport=transport,
        address=address,
        baud=_whole(baud, "--baud", DEFAULT_BAUD) if transport == SERIAL else None,
        framing=(framing or DEFAULT_FRAMING).upper() if transport == SERIAL else None,
        line_digits=_whole(line_digits, "--line-digits", DEFAULT_LINE_DIGITS),
        heartbeat_timeout_s=_whole(
            heartbeat_timeout, "--heartbeat-timeout", DEFAULT_HEARTBEAT_TIMEOUT_S
        ),
    )
    problem = link_problem(link)
    if problem:
        raise CommandError(problem)
    _write(data_dir, lambda conn: receivers.add_link(conn, link, now_us()))
    shown = {"name": name, "protocol": protocol, "transport": transport, "address": address,
             "baud": link.baud, "framing": link.framing, "line_digits": link.line_digits,
             "heartbeat_timeout": link.heartbeat_timeout_s}  # fmt: skip
    serial_port = f" {link.baud} {link.framing}" if transport == SERIAL else ""
    emit(
        as_json,
        shown,
        lambda: click.echo(
            f"receiver link {name} added: {protocol}, {transport} {address}{serial_port}"
        ),
    )


@receiver_group.command("list")
@data_dir_option
@json_option
def receiver_list(data_dir: Path | None, as_json: bool) -> None:
    """List the links: settings, state (idle before the first frame, up, failed), last frame
    seen (UTC), the node holding it, frames and answers counted, lines mapped."""
    from alarmhub.store import receivers

    rows = [shown_link(row) for row in _read(data_dir, receivers.link_states)]
    emit(as_json, rows, lambda: table(rows, LIST_COLUMNS, "no receiver link"))


@receiver_group.command("remove")
@click.argument("name", metavar="NAME")
@data_dir_option
@json_option
@provisioning_errors
def receiver_remove(name: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove the link NAME and its lines (a running node stops it)."""
    from alarmhub.store import receivers

    _checked_name(name)
    if not _write(data_dir, lambda conn: receivers.remove_link(conn, name)):
        raise CommandError(f"no receiver link {name!r}")
    emit(
        as_json,
        {"name": name, "removed": True},
        lambda: click.echo(f"receiver link {name} removed"),
    )


@receiver_group.group("line")
def receiver_line() -> None:
    """Receiver lines: which dnis (and line mask) a link's receiver and line numbers map to."""


@receiver_line.command("add")
@click.argument("name", metavar="NAME")
@click.option("--receiver", required=True, metavar="RR",
              help=f"The frames' receiver number, 0-{RECEIVER_MAX} (01 is 1).")  # fmt: skip
@click.option("--line", required=True, metavar="L",
              help=f"The frames' line number, 0-{LINE_MAX} (01 is 1).")  # fmt: skip
@click.option("--dnis", required=True, help="The dnis whose line mask the accounts go through.")
@data_dir_option
@json_option
@provisioning_errors
def receiver_line_add(
    name: str, receiver: str, line: str, dnis: str, data_dir: Path | None, as_json: bool
) -> None:
    """Map link NAME's receiver RR line L to DNIS."""
    from alarmhub.store import receivers

    _checked_name(name)
    number, line_no = _numbers(receiver, line)
    _write(data_dir, lambda conn: receivers.add_line(conn, name, number, line_no, dnis, now_us()))
    emit(
        as_json,
        {"link": name, "receiver": number, "line": line_no, "dnis": dnis},
        lambda: click.echo(f"{name} receiver {number} line {line_no} -> dnis {dnis}"),
    )


@receiver_line.command("list")
@click.argument("name", metavar="[NAME]", required=False)
@data_dir_option
@json_option
def receiver_line_list(name: str | None, data_dir: Path | None, as_json: bool) -> None:
    """List the receiver lines of link NAME, or of every link."""
    from alarmhub.store import receivers

    if name is not None:
        _checked_name(name)

    def read(conn: Connection) -> list[tuple[str, int, int, str]] | None:
        if name is not None and name not in {link.name for link in receivers.links(conn)}:
            return None
        return receivers.lines(conn, name)

    found = _read(data_dir, read)
    if found is None:
        raise CommandError(f"no receiver link {name!r}")
    rows = [dict(zip(("link", "receiver", "line", "dnis"), row, strict=True)) for row in found]
    emit(as_json, rows, lambda: table(rows, LINE_COLUMNS, "no receiver line"))


@receiver_line.command("remove")
@click.argument("name", metavar="NAME")
@click.option("--receiver", required=True, metavar="RR", help="The receiver number (01 is 1).")
@click.option("--line", required=True, metavar="L", help="The line number (01 is 1).")
@data_dir_option
@json_option
@provisioning_errors
def receiver_line_remove(
    name: str, receiver: str, line: str, data_dir: Path | None, as_json: bool
) -> None:
    """Remove a receiver line's mapping (its accounts then raise UNKNOWN ACCOUNT)."""
    from alarmhub.store import receivers

    _checked_name(name)
    number, line_no = _numbers(receiver, line)
    if not _write(data_dir, lambda conn: receivers.remove_line(conn, name, number, line_no)):
        raise CommandError(f"{name} receiver {number} line {line_no} is not mapped")
    emit(
        as_json,
        {"link": name, "receiver": number, "line": line_no, "removed": True},
        lambda: click.echo(f"{name} receiver {number} line {line_no} removed"),
    )
