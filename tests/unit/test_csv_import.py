"""The import files' formats without a database: each kind's columns, how a header is read, how
a row becomes the store's item or is refused, and the contact commands' phone and call list
syntax."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import click
import pytest
from sqlalchemy import create_engine

from alarmhub.cli import contacts, csv_import
from alarmhub.cli.csv_import import FORMATS, CsvFormat, import_csv, order_of
from alarmhub.core.account import Account
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.response import Contact, PanelUser, Phone, PhoneKind, Zone


def test_each_kind_names_its_columns_required_first_optional_in_brackets() -> None:
    assert set(FORMATS) == {"account", "zone", "user", "contact"}
    assert FORMATS["account"].spec == (
        "account,name,[street],[city],[state],[police],[fire],[medical],[permit]"
    )
    assert FORMATS["zone"].spec == "account,zone,[area],description,[equipment]"
    assert FORMATS["user"].spec == "account,user,name"
    assert FORMATS["contact"].spec == (
        "account,name,[phone1],[kind1],[phone2],[kind2],[phone3],[kind3],"
        "[email],[relation],[notes],[notify],[notify_by],[list],[order]"
    )


def header(kind: str, names: list[str]) -> list[str]:
    return csv_import._header(FORMATS[kind], Path("f.csv"), names)


def test_a_header_is_read_in_any_case_with_aliases_and_optional_columns_left_out() -> None:
    assert header("account", [" Account_Number ", "COMPANY_NAME", "city"]) == [
        "account",
        "name",
        "city",
    ]
    assert header("zone", ["zone", "description", "account"]) == ["zone", "description", "account"]


@pytest.mark.parametrize(
    ("names", "why"),
    [
        (["account", "zone"], "(missing: description)"),
        (["account", "zone", "description", "colour"], "(unknown: colour)"),
        (["account", "zone", "description", "Zone"], "(twice: zone)"),
        ([], "(missing: account, zone, description)"),
    ],
)
def test_a_header_that_is_not_the_kinds_is_refused(names: list[str], why: str) -> None:
    with pytest.raises(ProvisioningError) as caught:
        header("zone", names)
    message = str(caught.value)
    assert message.startswith("f.csv: the header must name the columns account,zone,[area],")
    assert message.endswith(why)


def item(kind: str, **fields: str) -> Any:
    return FORMATS[kind].item(fields)


def test_rows_become_the_stores_items() -> None:
    assert item("account", account="A1", name="Acme", police="SPD", permit="") == (
        Account("A1", "Acme"),
        {"police": "SPD", "permit": ""},
    )
    assert item("zone", account="A1", zone="15", description="DOOR") == Zone("A1", "15", "DOOR")
    assert item("user", account="A1", user="2", name="JO") == PanelUser("A1", "2", "JO")
    contact, place, given = item(
        "contact", account="A1", name="Jane", phone1="555", kind1="Home", phone2="556", order="2"
    )
    assert contact == Contact("A1", "Jane", (Phone("555", PhoneKind.HOME), Phone("556")))
    assert (place.list_name, place.order) == ("PRIMARY", 2)
    assert given == {"phones"}  # the columns of the row's file: the other fields are kept
    _, place, given = item("contact", account="A1", name="Jane", list="keyholders", notes="")
    assert (place.list_name, place.order) == ("KEYHOLDERS", None)
    assert given == {"notes"}
    assert item("contact", account="A1", name="Jane", kind3="", email="")[2] == {"phones", "email"}


@pytest.mark.parametrize(
    ("kind", "fields", "error"),
    [
        ("account", {"account": "", "name": "x"}, "account number must not be empty"),
        ("account", {"account": "A1", "name": "x", "permit": "P" * 41}, "permit must be at most"),
        ("zone", {"account": "A1", "zone": "1", "description": ""}, "must not be empty"),
        ("user", {"account": "A1", "user": "1234", "name": "x"}, "user must be a number"),
        ("contact", {"account": "A1", "name": "x", "kind2": "home"}, "kind2 is given without"),
        ("contact", {"account": "A1", "name": "x", "phone1": "1", "kind1": "fax"}, "'fax'"),
        ("contact", {"account": "A1", "name": "x", "order": "first"}, "order is 1-999"),
        ("contact", {"account": "A1", "name": "x", "list": "a b"}, "call list name"),
    ],
)
def test_rows_that_cannot_be_kept_say_why(kind: str, fields: dict[str, str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        FORMATS[kind].item(fields)


def test_an_order_that_is_not_a_number_is_out_of_range() -> None:
    assert [order_of(text) for text in ("1", "007", "x", "-1", "²")] == [1, 7, 0, 0, 0]


def test_reading_reports_bad_rows_by_line_and_chunks_the_good_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored: list[list[int]] = []

    def store(_engine: Any, lines: csv_import.Lines) -> csv_import.Stored:
        stored.append([line for line, _ in lines])
        return len(lines), 0, [{"line": lines[0][0], "error": "the store's refusal"}]

    fmt = CsvFormat("user", "users", FORMATS["user"].columns, FORMATS["user"].item, store)
    monkeypatch.setitem(FORMATS, "user", fmt)
    monkeypatch.setattr(csv_import, "IMPORT_CHUNK", 2)
    path = tmp_path / "users.csv"
    path.write_text(
        'account,user,name\nA1,1,"SMITH, JOHN"\nA1,7,"TWO\nLINES"\nA1,x,BAD\n\n'
        "A1,2,B\nA1,3,C,extra\nA1,4\nA1,5,E\n"
    )
    seen: list[int] = []
    result = import_csv(create_engine("sqlite://"), "user", path, seen.append)  # never opened
    assert stored == [[2, 7], [10]]  # a quoted field's newline counts, the blank line is skipped
    assert seen == [6, 9]  # lines read after the header
    assert result == {
        "added": 3,
        "updated": 0,
        "refused": [
            {"line": 2, "error": "the store's refusal"},
            {"line": 4, "error": "name must be printable text"},
            {"line": 5, "error": "user must be a number from 000 to 999"},
            {"line": 8, "error": "more fields than the header names"},
            {"line": 9, "error": "name must not be empty"},
            {"line": 10, "error": "the store's refusal"},
        ],
    }


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    path.write_bytes(b"account,user,name\nA1,1,\xff\xfe\n")
    with pytest.raises(ProvisioningError, match="not UTF-8"):
        import_csv(None, "user", path)  # type: ignore[arg-type]


def user_rows(count: int) -> str:
    """``count`` good rows of the user format, of varied lengths, for lines 2 to count + 1."""
    return "".join(f"A1,{n % 1000:03},{'N' * (n % 37 + 1)}\n" for n in range(count))


def counting_store(stored: list[int]) -> CsvFormat:
    def store(_engine: Any, lines: csv_import.Lines) -> csv_import.Stored:
        stored.extend(line for line, _ in lines)
        return len(lines), 0, []

    return CsvFormat("user", "users", FORMATS["user"].columns, FORMATS["user"].item, store)


def test_a_bad_byte_is_reported_at_its_line_with_what_was_imported_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the text was decoded in blocks ahead of the reader, so a bad byte on line 1,502
    was reported "after line 1222", and nothing said that lines 2-1,001 were stored."""
    stored: list[int] = []
    monkeypatch.setitem(FORMATS, "user", counting_store(stored))
    path = tmp_path / "users.csv"
    path.write_bytes(b"account,user,name\n" + user_rows(1500).encode() + b"A1,1,\xff\nA1,2,B\n")
    with pytest.raises(ProvisioningError) as refused:
        import_csv(create_engine("sqlite://"), "user", path)
    assert str(refused.value) == (
        f"{path}:1502: not UTF-8 text; lines 2-1,001 were imported (added 1000, updated 0, "
        "rows refused 0), nothing after line 1,001"
    )
    assert stored == list(range(2, 1002))


def test_a_bad_first_line_imports_nothing(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    path.write_bytes(b"\xef\xbb\xbfaccount,user,\xc3name\nA1,1,B\n")
    with pytest.raises(ProvisioningError, match=r"users.csv:1: not UTF-8 text; nothing was imp"):
        import_csv(create_engine("sqlite://"), "user", path)


def test_a_20_mb_line_is_refused_at_its_line_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the line was read whole (a 20 MB string, and its row) before csv refused it."""
    stored: list[int] = []
    monkeypatch.setitem(FORMATS, "user", counting_store(stored))
    path = tmp_path / "users.csv"
    path.write_bytes(b"account,user,name\nA1,1,A\nA1,2," + b"x" * 20_000_000 + b"\nA1,3,C\n")
    tracemalloc.start()
    try:
        with pytest.raises(ProvisioningError) as refused:
            import_csv(create_engine("sqlite://"), "user", path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(refused.value) == f"{path}:3: a row longer than 65,536 bytes; nothing was imported"
    assert peak < 2_000_000, f"{peak:,} bytes at the peak"


def test_a_quoted_field_may_span_lines_but_a_row_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    lines = "x\n" * 40_000  # one quoted field of 40,000 lines: 80,000 bytes
    path.write_text(f'account,user,name\nA1,1,"{lines}"\n')
    with pytest.raises(ProvisioningError, match=r"users.csv:32767: a row longer than 65,536"):
        import_csv(create_engine("sqlite://"), "user", path)


def test_lines_ended_by_a_carriage_return_alone_are_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored: list[int] = []
    monkeypatch.setitem(FORMATS, "user", counting_store(stored))
    path = tmp_path / "users.csv"
    path.write_bytes(b"account,user,name\rA1,1,A\r\nA1,2,B\rA1,x,C\rA1,3,D")
    result = import_csv(create_engine("sqlite://"), "user", path)
    assert stored == [2, 3, 5]
    assert result["refused"] == [{"line": 4, "error": "user must be a number from 000 to 999"}]


def test_phones_are_number_or_kind_colon_number() -> None:
    assert contacts.phones_of(("555-0100", "home:555-0101", " WORK : 1 ")) == (
        Phone("555-0100", PhoneKind.MOBILE),
        Phone("555-0101", PhoneKind.HOME),
        Phone("1", PhoneKind.WORK),
    )
    with pytest.raises(click.ClickException, match="'fax' is not one of mobile, home, work"):
        contacts.phones_of(("fax:1",))


def test_call_list_places_are_name_or_name_colon_order() -> None:
    def places(lists: tuple[str, ...], order: int | None = None) -> list[tuple[str, int | None]]:
        return [(p.list_name, p.order) for p in contacts.placements(lists, order)]

    assert places(()) == []
    assert places((), 2) == [("PRIMARY", 2)]
    assert places(("keyholders",), 3) == [("KEYHOLDERS", 3)]
    assert places(("primary", "night:1")) == [("PRIMARY", None), ("NIGHT", 1)]
    with pytest.raises(click.ClickException, match="--order goes with one --list"):
        places(("a", "b"), 1)
    with pytest.raises(click.ClickException, match="names its order"):
        places(("a:1",), 1)
    with pytest.raises(ProvisioningError, match="order is 1-999"):
        places(("a:x",))
