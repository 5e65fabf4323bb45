"""CSV imports: accounts, zones, panel users and contacts added or updated from a file a chunk of
rows at a time (memory stays flat however long the file is), each bad row reported by its line
(the header is line 1) and skipped, the good rows kept. Importing the same file again adds
nothing and changes nothing.

A file that stops being readable (a byte that is not UTF-8, a row over ``MAX_ROW_BYTES``, a
quote left open) stops the import at its line: the chunks stored before it stay, and the error
says which lines they were. The file is read as bytes a line at a time, each line decoded on
its own, so the line named is the one that holds the bad byte and no more than one row is held.

One reader serves every kind: a :class:`CsvFormat` names its columns, turns a row into the item
the store takes (or says why it cannot), and stores a chunk. :func:`import_csv` imports a file
for code; :func:`import_command` makes each kind's ``import`` command, whose ``--help`` names
the columns.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from alarmhub.cli.output import data_dir_option, emit, json_option, open_store, provisioning_errors
from alarmhub.core import response as rules
from alarmhub.core.account import Account, account_problem
from alarmhub.core.errors import ProvisioningError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

T = TypeVar("T")

IMPORT_CHUNK = 1000
"""Rows handed to the store at a time, each chunk in one transaction."""

MAX_ROW_BYTES = 65_536
"""The longest row of an import file (its lines together, when a quoted field spans lines):
a longer one stops the import at its line, read no further than this."""
READ_BLOCK = 1 << 16

Lines = list[tuple[int, Any]]
Stored = tuple[int, int, list[dict[str, Any]]]
"""What storing a chunk did: rows added, rows updated, rows refused (``{"line", "error"}``)."""


@dataclass(frozen=True, slots=True)
class Column:
    """A column of an import file: header names are matched in any case."""

    name: str
    required: bool = False
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CsvFormat:
    """What a kind of import file holds and where its rows go."""

    kind: str
    noun: str
    columns: tuple[Column, ...]
    item: Callable[[Mapping[str, str]], Any]
    """A row's fields (stripped; absent columns missing) as the store's item; ValueError says
    why the row cannot be one."""
    store: Callable[[Engine, Lines], Stored]
    about: str = ""

    @property
    def spec(self) -> str:
        """The columns as help and errors write them: ``account,zone,[area],description``."""
        return ",".join(c.name if c.required else f"[{c.name}]" for c in self.columns)


# the formats ---------------------------------------------------------------------------------


def _checked(item: T, problem: str | None) -> T:
    if problem:
        raise ValueError(problem)
    return item


ACCOUNT_RESPONSE = (*(kind.value for kind in rules.AgencyKind), "permit")
"""An account file's columns of response data: agency codes by kind, the permit."""


def _account(f: Mapping[str, str]) -> tuple[Account, dict[str, str]]:
    account = Account(
        f["account"], f["name"], f.get("street", ""), f.get("city", ""), f.get("state", "")
    )
    _checked(account, account_problem(account))
    response = {column: f[column] for column in ACCOUNT_RESPONSE if column in f}
    return account, _checked(response, rules.permit_problem(response.get("permit", "")))


def _store_accounts(engine: Engine, lines: Lines) -> Stored:
    """Accounts, then the agencies and permits of those whose rows name them: a row naming an
    agency that is not one of its kind is refused."""
    from alarmhub.store import provisioning, response_import
    from alarmhub.store.response import list_agencies

    refused: list[dict[str, Any]] = []
    if any(response for _, (_, response) in lines):
        kinds = {agency["code"]: agency["kind"] for agency in list_agencies(engine)}
        kept = []
        for line, (account, response) in lines:
            problem = next(
                (
                    problem
                    for kind in rules.AgencyKind
                    if (code := response.get(kind.value))
                    and (problem := rules.assignment_problem(kind.value, code, kinds.get(code)))
                ),
                None,
            )
            if problem:
                refused.append({"line": line, "error": problem})
            else:
                kept.append((line, (account, response)))
        lines = kept
    count = provisioning.upsert_accounts(engine, [account for _, (account, _) in lines])
    response_import.set_account_responses(
        engine, [(account.account_number, response) for _, (account, response) in lines]
    )
    return count.added, count.updated, refused


def _zone(f: Mapping[str, str]) -> rules.Zone:
    zone = rules.Zone(
        f["account"], f["zone"], f["description"], f.get("area", ""), f.get("equipment", "")
    )
    return _checked(zone, rules.zone_problem(zone))


def _store_zones(engine: Engine, lines: Lines) -> Stored:
    from alarmhub.store.response_import import upsert_zones

    outcome = upsert_zones(engine, lines)
    return outcome.added, outcome.updated, outcome.refused


def _user(f: Mapping[str, str]) -> rules.PanelUser:
    user = rules.PanelUser(f["account"], f["user"], f["name"])
    return _checked(user, rules.user_problem(user))


def _store_users(engine: Engine, lines: Lines) -> Stored:
    from alarmhub.store.response_import import upsert_users

    outcome = upsert_users(engine, lines)
    return outcome.added, outcome.updated, outcome.refused


PHONE_FIELDS = tuple((f"phone{n}", f"kind{n}") for n in range(1, rules.MAX_PHONES + 1))


def order_of(text: str) -> int:
    """A call list order as written; what is not a number is refused as out of range."""
    return int(text) if text.isascii() and text.isdigit() else 0


def _names(text: str) -> tuple[str, ...]:
    """Kinds or channels as a field holds them: separated by spaces or commas."""
    return tuple(text.replace(",", " ").lower().split())


def _contact(f: Mapping[str, str]) -> tuple[rules.Contact, Any, frozenset[str]]:
    """A contact row: the contact, its place, and the contact's fields the file has columns
    for (an existing contact keeps the others)."""
    from alarmhub.store.contacts import placement
    from alarmhub.store.response_import import CONTACT_FIELDS

    phones = []
    for number, kind in PHONE_FIELDS:
        if f.get(number):
            phones.append(rules.Phone(f[number], rules.phone_kind(f.get(kind, ""))))
        elif f.get(kind):
            raise ValueError(f"{kind} is given without {number}")
    contact = rules.Contact(
        f["account"],
        f["name"],
        tuple(phones),
        f.get("email", ""),
        f.get("relation", ""),
        f.get("notes", ""),
        _names(f.get("notify", "")),
        _names(f.get("notify_by", "")),
    )
    _checked(contact, rules.contact_problem(contact))
    order = f.get("order", "")
    place = placement(f.get("list") or rules.DEFAULT_CALL_LIST, order_of(order) if order else None)
    given = frozenset(
        name for name, columns in CONTACT_FIELDS.items() if not f.keys().isdisjoint(columns)
    )
    return contact, place, given


def _store_contacts(engine: Engine, lines: Lines) -> Stored:
    from alarmhub.store.response_import import upsert_contacts

    outcome = upsert_contacts(engine, lines)
    return outcome.added, outcome.updated, outcome.refused


ACCOUNT_COLUMN = Column("account", True, ("account_number",))

FORMATS = {
    f.kind: f
    for f in (
        CsvFormat(
            "account",
            "accounts",
            (
                ACCOUNT_COLUMN,
                Column("name", True, ("company_name",)),
                Column("street"),
                Column("city"),
                Column("state"),
                *(Column(column) for column in ACCOUNT_RESPONSE),
            ),
            _account,
            _store_accounts,
            "police, fire and medical name the account's agencies by code (see 'agency list'), "
            "permit its alarm permit; an empty field clears one, a column left out changes "
            "nothing.",
        ),
        CsvFormat(
            "zone",
            "zones",
            (
                ACCOUNT_COLUMN,
                Column("zone", True),
                Column("area"),
                Column("description", True),
                Column("equipment"),
            ),
            _zone,
            _store_zones,
            "An empty area means every area of the panel.",
        ),
        CsvFormat(
            "user",
            "panel users",
            (ACCOUNT_COLUMN, Column("user", True), Column("name", True)),
            _user,
            _store_users,
        ),
        CsvFormat(
            "contact",
            "contacts",
            (
                ACCOUNT_COLUMN,
                Column("name", True),
                *(Column(c) for pair in PHONE_FIELDS for c in pair),
                Column("email"),
                Column("relation"),
                Column("notes"),
                Column("notify"),
                Column("notify_by"),
                Column("list"),
                Column("order"),
            ),
            _contact,
            _store_contacts,
            "A contact is known by account and name: a contact on two call lists is two rows "
            "with the same account and name, each naming one list (empty: PRIMARY) and its "
            "order (empty: last, or where it is already); a contact at that order and those "
            "after it move down one, as with 'contact update --list'. A column left out "
            "changes nothing of a contact that exists (the phone columns together: any of "
            "them replaces every number); an empty field clears it. Give a contact's numbers "
            "and details on every row of it (the last one wins). A kind is mobile, home or "
            "work (empty: mobile). notify names the kinds of notification the contact gets "
            "(alarm, trouble, openclose, schedule, test), notify_by how (email, sms), each "
            "separated by spaces or commas. Passcodes are not imported: set each with "
            "'contact update --passcode'.",
        ),
    )
}
"""Every kind of import file, by the kind's name."""


# reading -------------------------------------------------------------------------------------


def _header(fmt: CsvFormat, path: Path, header: Sequence[str] | None) -> list[str]:
    """The columns a file's header names, as the format calls them; ProvisioningError when
    they are not the format's."""
    names = {alias: c.name for c in fmt.columns for alias in (c.name, *c.aliases)}
    given = [h.strip().lower() for h in header or []]
    unknown = [h for h in given if h not in names]
    found = [names.get(h, h) for h in given]
    missing = [c.name for c in fmt.columns if c.required and c.name not in found]
    twice = sorted({h for h in found if found.count(h) > 1})
    if unknown or missing or twice:
        why = [
            f"{label}: {', '.join(items)}"
            for label, items in (("unknown", unknown), ("missing", missing), ("twice", twice))
            if items
        ]
        raise ProvisioningError(
            f"{path}: the header must name the columns {fmt.spec} ({'; '.join(why)})"
        )
    return found


class Unreadable(Exception):
    """The file cannot be read on from ``line``: ``reason``."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(line, reason)
        self.line = line
        self.reason = reason


_LINE_ENDS = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class _TextLines:
    """The lines of a binary file as text for ``csv.reader``, each decoded on its own (the
    first without its byte-order mark); :class:`Unreadable` at a line that is not UTF-8 or
    that makes its row longer than ``MAX_ROW_BYTES`` (read no further than that)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self.lines = 0  # handed out so far (a line ends at \n, \r\n or \r, as csv counts)
        self._row_bytes = 0

    def row_done(self) -> None:
        """The reader returned a row: the next line begins another."""
        self._row_bytes = 0

    def __iter__(self) -> Iterator[str]:
        while raw := self._fh.readline(MAX_ROW_BYTES - self._row_bytes + 1):
            self._row_bytes += len(raw)
            if self._row_bytes > MAX_ROW_BYTES:
                raise Unreadable(self.lines + 1, f"a row longer than {MAX_ROW_BYTES:,} bytes")
            try:
                text = raw.decode("utf-8-sig" if self.lines == 0 else "utf-8")
            except UnicodeDecodeError:
                raise Unreadable(self.lines + 1, "not UTF-8 text") from None
            for line in _LINE_ENDS.findall(text) if "\r" in text else (text,):
                self.lines += 1
                yield line


def _chunks(
    fmt: CsvFormat, path: Path, refused: list[dict[str, Any]]
) -> Iterator[tuple[int, Lines]]:
    """The file's good rows as (line, item), a chunk at a time with the lines read so far;
    bad rows go to ``refused``. :class:`Unreadable` where the file cannot be read on."""
    with path.open("rb") as fh:
        source = _TextLines(fh)
        reader = csv.reader(source)
        try:
            columns = _header(fmt, path, next(reader, None))
            source.row_done()
            width = len(columns)
            chunk: Lines = []
            for row in reader:
                source.row_done()
                line = reader.line_num
                if len(row) > width:
                    refused.append({"line": line, "error": "more fields than the header names"})
                    continue
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # a blank line
                if len(row) < width:
                    row += [""] * (width - len(row))
                fields = {name: value.strip() for name, value in zip(columns, row, strict=False)}
                try:
                    chunk.append((line, fmt.item(fields)))
                except ValueError as exc:
                    refused.append({"line": line, "error": str(exc)})
                    continue
                if len(chunk) >= IMPORT_CHUNK:
                    yield line - 1, chunk
                    chunk = []
            yield reader.line_num - 1, chunk
        except csv.Error as exc:
            raise Unreadable(reader.line_num, str(exc)) from None


def import_csv(
    engine: Engine, kind: str, path: Path, on_progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Import a CSV file of ``kind`` (account, zone, user or contact): good rows added or
    updated, bad ones refused by line. ``on_progress`` is called after each chunk with the
    lines of the file read so far after the header. ProvisioningError when the file cannot
    be read as that kind (its header, its encoding)."""
    fmt = FORMATS.get(kind)
    if fmt is None:
        raise ProvisioningError(f"no import of {kind!r} (one of {', '.join(FORMATS)})")
    return import_with(engine, fmt, path, on_progress)


def import_with(
    engine: Engine,
    fmt: CsvFormat,
    path: Path,
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """:func:`import_csv` of a format of the caller's (one whose rows need more than the
    engine to be stored: ``schedule import``)."""
    from alarmhub.store.response_import import refresh_statistics

    kind = fmt.kind
    added = updated = stored_through = 0
    refused: list[dict[str, Any]] = []
    next_refresh = 1
    chunks = enumerate(_chunks(fmt, path, refused), start=1)
    try:
        for chunk, (lines_read, lines) in chunks:
            if lines:
                more_added, more_updated, more_refused = fmt.store(engine, lines)
                added, updated = added + more_added, updated + more_updated
                refused.extend(more_refused)
            stored_through = lines_read + 1  # the file's lines, the header being line 1
            if chunk == next_refresh:  # after chunks 1, 2, 4, 8...: the tables' size, within 2x
                refresh_statistics(engine, kind)
                next_refresh *= 2
            if on_progress is not None:
                on_progress(lines_read)
    except Unreadable as stop:
        kept = (
            f"lines 2-{stored_through:,} were imported (added {added}, updated {updated}, "
            f"rows refused {len([r for r in refused if r['line'] <= stored_through])}), "
            f"nothing after line {stored_through:,}"
            if stored_through > 1
            else "nothing was imported"
        )
        raise ProvisioningError(f"{path}:{stop.line}: {stop.reason}; {kept}") from None
    refused.sort(key=lambda r: int(r["line"]))
    return {"added": added, "updated": updated, "refused": refused}


# the commands --------------------------------------------------------------------------------


def import_command(kind: str) -> click.Command:
    """The ``import`` command of a kind's group, its help naming the columns."""
    fmt = FORMATS[kind]

    @click.command(
        "import",
        help=f"Add or update {fmt.noun} from a CSV FILE.\n\n"
        "\b\nColumns (header names in any case; those in [ ] may be left out):\n"
        f"  {fmt.spec}\n\n"
        + (f"{fmt.about}\n\n" if fmt.about else "")
        + "Bad rows are reported by line (the header is line 1) and skipped; good rows are "
        "kept. Exits 1 when any row was refused. Importing a file again changes nothing.",
        short_help=f"Add or update {fmt.noun} from a CSV file.",
    )
    @click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @data_dir_option
    @json_option
    @provisioning_errors
    def command(file: Path, data_dir: Path | None, as_json: bool) -> None:
        result = _import_shown(open_store(data_dir), kind, file, as_json)

        def human() -> None:
            for bad in result["refused"]:
                click.echo(f"{file}:{bad['line']}: {bad['error']}", err=True)
            click.echo(
                f"{fmt.noun} added {result['added']}, updated {result['updated']}, "
                f"rows refused {len(result['refused'])}"
            )

        emit(as_json, result, human)
        if result["refused"]:
            sys.exit(1)

    return command


def _import_shown(engine: Engine, kind: str, file: Path, quiet: bool) -> dict[str, Any]:
    """:func:`import_csv` with a progress bar on standard error when it is a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with file.open("rb") as fh:  # counted a block at a time: a long line is never held
        total = max(
            sum(block.count(b"\n") for block in iter(lambda: fh.read(READ_BLOCK), b"")) - 1, 0
        )
    with Progress(
        TextColumn(f"importing {FORMATS[kind].noun}"),
        BarColumn(),
        MofNCompleteColumn(),
        transient=True,
        disable=quiet or not sys.stderr.isatty(),
        console=Console(stderr=True),
    ) as progress:
        task = progress.add_task("import", total=total)
        return import_csv(
            engine, kind, file, lambda done: progress.update(task, completed=min(done, total))
        )


account_import = import_command("account")
