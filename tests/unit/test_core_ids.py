"""Database ids (``core.ids``): what can be a row's id, and the command line's type for one."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from alarmhub.cli.output import DATABASE_ID
from alarmhub.core.ids import MAX_ID, is_id, parse_id


@pytest.mark.parametrize("text", ["1", "42", str(MAX_ID), "007"])
def test_ids_that_fit_the_database(text: str) -> None:
    assert parse_id(text) == int(text)


@pytest.mark.parametrize(
    "text", ["0", "-1", "", " 1", "1.0", "１２", str(MAX_ID + 1), "9" * 5000, "0" * 30 + "1"]
)
def test_anything_else_is_no_row_s_id(text: str) -> None:
    assert parse_id(text) is None


def test_is_id_takes_ints_only() -> None:
    assert is_id(1) and is_id(MAX_ID)
    assert not any(is_id(v) for v in (0, -5, MAX_ID + 1, True, 1.0, "1", None))


def test_the_command_line_type_prints_an_error_line_and_exits_1() -> None:
    @click.command()
    @click.argument("row", type=DATABASE_ID)
    def show(row: int) -> None:
        click.echo(row)

    assert CliRunner().invoke(show, ["12"]).output == "12\n"
    refused = CliRunner().invoke(show, [str(MAX_ID + 1)])
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: ROW must be a whole number from 1 to ")

    @click.command()
    @click.option("--webhook", "webhook_id", type=DATABASE_ID)
    def pick(webhook_id: int) -> None:
        click.echo(webhook_id)

    refused = CliRunner().invoke(pick, ["--webhook", "0"])
    assert (refused.exit_code, refused.stderr) == (
        1,
        "error: --webhook must be a whole number from 1 to 9223372036854775807, not '0'\n",
    )
