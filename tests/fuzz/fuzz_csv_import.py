"""Fuzz the CSV imports (``cli/csv_import.py``) on a real SQLite database: files of each kind
(account, zone, user, contact) made of their real columns and plausible fields, then mutated
(bytes replaced, inserted or removed, cut short), raw bytes, quotes left open, carriage
returns, byte-order marks, bad UTF-8 and rows around the row limit. Every import must end in
the documented result (``added``, ``updated``, and rows refused by a line of the file with a
sentence) or a ``ProvisioningError`` naming the file (its header, or a line it cannot read on,
with what was imported before it); nothing else may escape."""

from __future__ import annotations

import csv
import io
import re
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from alarmhub.cli import csv_import
from alarmhub.cli.csv_import import FORMATS, MAX_ROW_BYTES, import_csv
from alarmhub.core.account import Account
from alarmhub.core.errors import ProvisioningError
from alarmhub.store import provisioning
from alarmhub.store.engine import open_engine, upgrade
from tests.fuzz.common import FUZZ, Counter
from tests.fuzz.strategies import mutated

ACCOUNTS = ["700001", "700002"]
FIELDS = ["700001", "700002", "7999", "001", "999", "1000", "A", "Smith, Jo", "555-0100",
          "mobile", "fax", "PRIMARY", "1", "x@example.com", "", " ", "\u00e9", "\u202e",
          '"', "\r", "\n"]  # fmt: skip
STOPPED = re.compile(r"^(.*):(\d+): (.+); (nothing was imported|lines 2-[\d,]+ were imported .*)$")


def file_of(header: list[str], rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


@st.composite
def files(draw: st.DrawFn) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(sorted(FORMATS)))
    columns = FORMATS[kind].columns
    names = [c.name for c in columns]
    header = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
    if draw(st.booleans()):  # the required columns, as most files have them
        header = [c.name for c in columns if c.required] + [
            n for n in header if not any(c.name == n and c.required for c in columns)
        ]
    fields = st.sampled_from(FIELDS) | st.text(max_size=10)
    rows = draw(st.lists(st.lists(fields, max_size=len(header) + 1), max_size=8))
    raw = file_of(header, rows)
    shape = draw(st.integers(0, 9))
    if shape < 4:
        raw = draw(mutated(raw))
    elif shape == 4:
        raw = draw(st.binary(max_size=300))
    elif shape == 5:
        raw = b"\xef\xbb\xbf" + raw.replace(b"\n", draw(st.sampled_from([b"\r", b"\r\n"])))
    elif shape == 6:  # a row around the limit, alone or spread over a quoted field's lines
        size = draw(st.integers(MAX_ROW_BYTES - 40, MAX_ROW_BYTES + 40))
        filler = draw(st.sampled_from([b"x", b"x\n", b"\xc3\xa9"]))
        raw += b'700001,"' + filler * (size // len(filler)) + b'"\n'
    elif shape == 7:
        raw += draw(st.sampled_from([b'700001,"open', b"\xff\xfe", b"\x00", b"\xed\xa0\x80"]))
    return kind, raw


def test_csv_imports_end_in_a_result_or_a_provisioning_error() -> None:
    counter = Counter("CSV import")
    outcomes = {"imported": 0, "rows refused": 0, "file refused": 0}
    with tempfile.TemporaryDirectory() as directory:
        engine = open_engine(f"sqlite:///{Path(directory) / 'fuzz.db'}")
        upgrade(engine)
        provisioning.upsert_accounts(engine, [Account(a, f"Site {a}") for a in ACCOUNTS])
        path = Path(directory) / "import.csv"

        @FUZZ
        @given(file=files())
        def one(file: tuple[str, bytes]) -> None:
            counter.runs += 1
            kind, raw = file
            path.write_bytes(raw)
            lines = raw.count(b"\n") + raw.count(b"\r") + 1  # at most, whatever ends a line
            try:
                result = import_csv(engine, kind, path)
            except ProvisioningError as exc:
                message = str(exc)
                stopped = STOPPED.match(message)
                assert message.startswith(f"{path}:"), message
                assert stopped is None or 1 <= int(stopped.group(2)) <= lines, message
                outcomes["file refused"] += 1
                return
            assert set(result) == {"added", "updated", "refused"}
            assert result["added"] >= 0 and result["updated"] >= 0
            for refused in result["refused"]:
                assert set(refused) == {"line", "error"}
                assert 2 <= refused["line"] <= lines and refused["error"], refused
            outcomes["rows refused" if result["refused"] else "imported"] += 1

        try:
            one()
        finally:
            engine.dispose()
    print(f"CSV import outcomes: {outcomes} (chunks of {csv_import.IMPORT_CHUNK} rows)")
    counter.check()
