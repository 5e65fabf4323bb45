"""``account import``: subscriber accounts added or updated from a CSV file, in chunks, with
each bad row reported by its line and skipped."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from alarmhub.cli.output import CommandError, data_dir_option, emit, json_option, open_store
from alarmhub.core.account import Account, account_problem

IMPORT_CHUNK = 1000
CSV_COLUMNS = {
    "account": "account_number",
    "account_number": "account_number",
    "name": "company_name",
    "company_name": "company_name",
    "street": "street",
    "city": "city",
    "state": "state",
}


def csv_accounts(path: Path, refused: list[dict[str, Any]]) -> Iterator[tuple[int, Account]]:
    """Valid accounts of a CSV file with their line numbers; bad rows go to ``refused``."""
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip().lower() for h in reader.fieldnames or []]
        unknown = [h for h in header if h not in CSV_COLUMNS]
        if unknown or not {"account_number", "company_name"} <= {CSV_COLUMNS[h] for h in header}:
            raise CommandError(
                f"{path}: the header must name the columns account,name[,street,city,state]"
                + (f" (unknown: {', '.join(unknown)})" if unknown else "")
            )
        reader.fieldnames = [CSV_COLUMNS[h] for h in header]
        for row in reader:
            line = reader.line_num
            if None in row:
                refused.append({"line": line, "error": "more fields than the header names"})
                continue
            values = {k: (v or "").strip() for k, v in row.items()}
            acct = Account(**values)
            problem = account_problem(acct)
            if problem:
                refused.append({"line": line, "error": problem})
                continue
            yield line, acct


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@data_dir_option
@json_option
def account_import(file: Path, data_dir: Path | None, as_json: bool) -> None:
    """Add or update accounts from a CSV FILE with columns account,name[,street,city,state].

    Bad rows are reported by line and skipped; good rows are kept. Exits 1 when any row was bad.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from alarmhub.store import provisioning

    engine = open_store(data_dir)
    total_lines = max(sum(1 for _ in file.open("rb")) - 1, 0)
    refused: list[dict[str, Any]] = []
    added = updated = 0
    chunk: list[Account] = []
    with Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        transient=True,
        disable=as_json or not sys.stderr.isatty(),
        console=Console(stderr=True),
    ) as progress:
        task = progress.add_task("import", total=total_lines)
        last = 1
        for line, acct in csv_accounts(file, refused):
            chunk.append(acct)
            progress.update(task, completed=line - 1)
            last = line
            if len(chunk) >= IMPORT_CHUNK:
                count = provisioning.upsert_accounts(engine, chunk)
                added, updated, chunk = added + count.added, updated + count.updated, []
        if chunk:
            count = provisioning.upsert_accounts(engine, chunk)
            added, updated = added + count.added, updated + count.updated
        progress.update(task, completed=max(last - 1, total_lines))
    result = {"added": added, "updated": updated, "refused": refused}

    def human() -> None:
        for bad in refused:
            click.echo(f"{file}:{bad['line']}: {bad['error']}", err=True)
        click.echo(f"accounts added {added}, updated {updated}, rows refused {len(refused)}")

    emit(as_json, result, human)
    if refused:
        sys.exit(1)
