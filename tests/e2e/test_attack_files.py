"""Files, secrets and logs against someone else on the machine or on the network: the data
directory 0700 and its files 0600, a ``secret.key`` open to others refused, every secret of
the command line also from the environment or standard input, control characters from the
network escaped in logs, and ``alarmhub demo remove`` taking every demo credential away.

CLI and server run as real processes (``tests.support.processes``); file modes are checked under a
permissive umask (022) so that they come from alarmhub, not from whoever runs the tests.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import socket
import stat
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from alarmhub import logs
from alarmhub.dc09.frame import crc16
from tests.support.database import database_url, on_postgres, sqlite_only
from tests.support.processes import Server, cli, cli_json, free_port, provision, wait_for

# the database matters to these attacks: they run on SQLite and on PostgreSQL
# long: the module takes minutes in all under load, so it starts among the first
pytestmark = [pytest.mark.backends("sqlite", "postgresql"), pytest.mark.long]

DC09_KEY = "000102030405060708090A0B0C0D0E0F"
PASSWORD = "correct-horse-battery"
# every character a log line must never carry raw
UNSAFE = "\x00\x07\x08\t\n\x0b\x0c\r\x1b\x7f\x85\x9b\u2028\u2029\u202e"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def database_files(data_dir: Path) -> list[Path]:
    """The SQLite database of ``data_dir`` and its ``-wal`` / ``-shm`` / journal files."""
    return sorted(data_dir.glob("alarmhub.db*"))


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """The umask most shells have: what alarmhub creates must be private all the same."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def separate_database(tmp_path: Path) -> dict[str, str]:
    """On PostgreSQL, the database named by environment, so that the test's data directory is
    not made beforehand (by ``alarmhub.toml``); on SQLite, nothing (the file in the directory)."""
    if not on_postgres():
        return {}
    return {"ALARMHUB_DATABASE_URL": database_url(tmp_path / "postgres")}


# 1. the data directory 0700, the database files 0600 ----------------------------------------


@pytest.mark.backends("sqlite")  # the database plays no part in it
@pytest.mark.usefixtures("permissive_umask")
def test_a_new_data_directory_is_0700_and_its_files_0600(tmp_path: Path) -> None:
    data_dir = tmp_path / "new" / "data"
    env = separate_database(tmp_path)
    cli(data_dir, "driver", "add", "rx1", env=env)
    cli(data_dir, "apiuser", "add", "reports", env=env)  # makes secret.key
    assert mode(data_dir) == 0o700
    assert mode(data_dir.parent) == 0o700  # made by alarmhub too
    assert mode(data_dir / "secret.key") == 0o600
    if not on_postgres():
        files = database_files(data_dir)
        assert files, list(data_dir.iterdir())
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}


@pytest.mark.backends("sqlite")  # the database plays no part in it
@pytest.mark.usefixtures("permissive_umask")
def test_serve_writes_private_files_and_warns_of_an_open_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "station"
    provision_env = separate_database(tmp_path)
    data_dir.mkdir()
    data_dir.chmod(0o755)
    server = Server(data_dir, env=provision_env).start()
    try:
        cli(data_dir, "token", "create", "--name", "t", env=provision_env)  # a write or two
        if not on_postgres():
            wait_for(lambda: len(database_files(data_dir)) >= 3, "the -wal and -shm files")
    finally:
        server.stop()
    log = server.log()
    assert "data directory open to group or others" in log, log
    assert "mode=0755" in log and f'fix="chmod 700 {data_dir}"' in log, log
    assert mode(data_dir) == 0o755  # a directory alarmhub did not make is left as it is
    assert mode(data_dir / "secret.key") == 0o600
    files = database_files(data_dir)
    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}


@sqlite_only("database files of an older version")
def test_database_files_left_open_by_an_older_version_become_0600(tmp_path: Path) -> None:
    cli(tmp_path, "driver", "add", "rx1")
    for file in database_files(tmp_path):
        file.chmod(0o644)
    cli(tmp_path, "driver", "list")
    files = database_files(tmp_path)
    assert files
    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}


# 2. a secret.key open to group or others is refused ---------------------------------------


def key_error(path: Path, file_mode: int) -> str:
    return (
        f"error: {path} is open to group or others (mode {file_mode:04o}): "
        f"restrict it with chmod 600 {path}"
    )


@pytest.mark.parametrize("file_mode", [0o644, 0o620], ids=lambda m: f"{m:04o}")
@pytest.mark.parametrize(
    "command",
    [("apiuser", "add", "late", "--password", PASSWORD), ("dc09", "key", "set", "1234")],
    ids=["apiuser-add", "dc09-key-set"],
)
@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_commands_refuse_a_secret_key_open_to_others(
    tmp_path: Path, command: tuple[str, ...], file_mode: int
) -> None:
    cli(tmp_path, "apiuser", "add", "first", "--password", PASSWORD)
    key_file = tmp_path / "secret.key"
    key_file.chmod(file_mode)
    result = cli(tmp_path, *command, check=False, env={"ALARMHUB_DC09_KEY": DC09_KEY})
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert result.stderr.splitlines() == [key_error(key_file, file_mode)]
    key_file.chmod(0o600)
    cli(tmp_path, *command, env={"ALARMHUB_DC09_KEY": DC09_KEY})  # works once restricted


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_serve_refuses_a_secret_key_open_to_others(tmp_path: Path) -> None:
    cli(tmp_path, "driver", "add", "rx1")
    key_file = tmp_path / "secret.key"
    key_file.write_bytes(b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
    key_file.chmod(0o644)
    server = Server(tmp_path)
    try:
        with pytest.raises(AssertionError, match="server exited 1"):
            server.start()
    finally:
        server.kill()
    assert key_error(key_file, 0o644) in server.log().splitlines(), server.log()


# 3. every secret from the environment or standard input, none needed on the command line -----


def test_dc09_key_from_the_environment_and_from_standard_input(tmp_path: Path) -> None:
    cli(tmp_path, "dc09", "key", "set", "1111", env={"ALARMHUB_DC09_KEY": DC09_KEY})
    cli(tmp_path, "dc09", "key", "set", "2222", stdin=DC09_KEY + "\n")
    cli(tmp_path, "dc09", "key", "set", "3333", "--key", "-", stdin=DC09_KEY + "\n")
    accounts = cli_json(tmp_path, "dc09", "account", "list")
    assert isinstance(accounts, list)
    keyed = {a["account"] for a in accounts if a["encrypted"]}
    assert keyed == {"1111", "2222", "3333"}
    empty = cli(tmp_path, "dc09", "key", "set", "4444", stdin="", check=False)
    assert empty.returncode == 1
    assert empty.stderr.splitlines() == ["error: no AES key given"]


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_short_key_on_standard_input_is_refused_like_one_on_the_command_line(
    tmp_path: Path,
) -> None:
    result = cli(tmp_path, "dc09", "key", "set", "1234", stdin="ABC\n", check=False)
    assert result.returncode == 1 and result.stderr.startswith("error: "), result
    assert "ABC" not in result.stdout


def sign_in(url: str, code: str, password: str) -> int:
    """The console's answer to a sign-in (303 when signed in)."""
    with httpx.Client(base_url=url, timeout=30) as client:
        page = client.get("/console/login")
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found, page.text
        form = {"csrf": html.unescape(found.group(1)), "code": code, "password": password}
        return client.post("/console/login", data=form).status_code


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_every_secret_option_from_the_environment_or_standard_input(tmp_path: Path) -> None:
    token = provision(tmp_path)
    line = PASSWORD + "\n"
    cli(tmp_path, "operator", "add", "OP1", "--name", "One", "--password", "-", stdin=line)
    cli(tmp_path, "operator", "add", "OP2", "--name", "Two", "--password", "x" * 8)
    cli(tmp_path, "operator", "password", "OP2", stdin=line)  # asked: standard input
    cli(tmp_path, "operator", "add", "OP3", "--name", "Three",
        env={"ALARMHUB_OPERATOR_PASSWORD": PASSWORD})  # fmt: skip
    cli(tmp_path, "apiuser", "add", "in", "--password", "-", stdin=line)
    cli(tmp_path, "apiuser", "add", "env", env={"ALARMHUB_APIUSER_PASSWORD": PASSWORD})
    server = Server(tmp_path, env={"ALARMHUB_TIMEZONE": "UTC"}).start()
    try:
        url = {"ALARMHUB_URL": server.url}
        for code in ("OP1", "OP2", "OP3"):
            assert sign_in(server.url, code, PASSWORD) == 303, code
        for user in ("in", "env"):
            answered = cli(tmp_path, "query", "XMAINPRO", "--username", user, stdin=line, env=url)
            assert "XMAINPRO" in json.loads(answered.stdout), answered.stdout
        sent = cli(tmp_path, "send", "site1:rx1", "--dnis", "1234", "--panel", "1",
                   "--code", "E130", stdin=token + "\n", env=url)  # fmt: skip
        assert "signal accepted" in sent.stdout
        beat = cli(tmp_path, "heartbeat", "site1:rx1", "--count", "1", stdin=token + "\n", env=url)
        assert "heartbeat accepted" in beat.stdout
        none = cli(tmp_path, "send", "site1:rx1", "--dnis", "1234", "--panel", "1",
                   "--code", "E130", stdin="", env=url, check=False)  # fmt: skip
        assert none.returncode == 1
        assert none.stderr.splitlines() == ["error: no bearer token given"]
    finally:
        server.stop()


# 4. control characters from the network are escaped in logs ---------------------------------


FORGED = "\r\nts=2026-01-01T00:00:00.000Z level=error logger=alarmhub event=FORGED\x1b[31m"
FORGED_DC09 = FORGED[1:].encode()  # a CR would end the frame


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_the_formatters_escape_every_unsafe_character() -> None:
    value = "a" + UNSAFE + "\\z" + FORGED
    record = logging.makeLogRecord(
        {"name": "alarmhub.test", "levelname": "INFO", "levelno": 20, "msg": "got %s",
         "args": (value,), "peer": value, "plain": "simple"}
    )  # fmt: skip
    for formatter in (logs.KeyValueFormatter(), logs.JsonFormatter()):
        line = formatter.format(record)
        assert len(line.splitlines()) == 1, line
        assert not set(line) & set(UNSAFE), line
    keyvalue = logs.KeyValueFormatter().format(record)
    assert " plain=simple" in keyvalue
    assert "\\r\\nts=2026-01-01T00:00:00.000Z level=error" in keyvalue
    assert "\\x1b[31m" in keyvalue and "\\x00\\x07" in keyvalue and "\\u2028" in keyvalue
    decoded = json.loads(logs.JsonFormatter().format(record))
    assert decoded["peer"] == value and decoded["event"] == "got " + value


def dc09_frame(body: bytes) -> bytes:
    return b"\n" + f"{crc16(body):04X}{len(body):04X}".encode() + body + b"\r"


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_network_values_reach_the_log_escaped(tmp_path: Path) -> None:
    provision(tmp_path)
    dc09_port = free_port()
    server = Server(tmp_path, extra_args=("--dc09-listen", f"127.0.0.1:{dc09_port}"))
    server.start()
    try:
        # a DC-09 frame of an unknown type: answered DUH, and its text logged
        body = b'"ZZZZ"0001R0L0#1234[' + FORGED_DC09 + b"]_12:00:00,01-01-2026"
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(10)
            sock.sendto(dc09_frame(body), ("127.0.0.1", dc09_port))
            assert b"DUH" in sock.recvfrom(65536)[0]
        # a query with a username holding C1 controls (latin-1 in a header): logged as refused
        httpx.post(
            f"{server.url}/rest/rest.php?dataSource=methods&*view=xmsubmit",
            data={"*setMethod": "XMAINPRO"},
            headers={"X-SVC-Username": b"user\x9b31m\x85FORGED"},  # type: ignore[dict-item]
            timeout=10,
        )
        wait_for(lambda: "ZZZZ" in server.log() and "query refused" in server.log(), "logs")
    finally:
        server.stop()
    log = server.log()
    lines = log.splitlines()
    assert not [ln for ln in lines if ln.startswith("ts=2026-01-01")], log
    assert not set(log) & set(UNSAFE.replace("\n", "")), repr(log)
    frame_line = next(ln for ln in lines if "ZZZZ" in ln)
    assert "[\\nts=2026-01-01T00:00:00.000Z level=error" in frame_line, frame_line
    assert "\\x1b[31m" in frame_line, frame_line
    refused_line = next(ln for ln in lines if "query refused" in ln and "FORGED" in ln)
    assert "user\\x9b31m\\x85FORGED" in refused_line, refused_line


# 5. removing the demo removes every demo credential ------------------------------------------


def test_demo_remove_leaves_no_working_demo_credential(tmp_path: Path) -> None:
    server = Server(tmp_path, extra_args=("--demo",)).start()
    try:
        text = (tmp_path / "DEMO-CREDENTIALS.txt").read_text()
        token = re.search(r"bearer token\s+(\S+)", text)
        password = re.search(r"operator D1 .*password (\S+)", text)
        assert token and password, text
        beat = f"{server.url}/rx/demo-site:demo/hb"
        headers = {"Authorization": f"Bearer {token.group(1)}"}
        assert httpx.get(beat, headers=headers, timeout=10).status_code == 200
        assert sign_in(server.url, "D1", password.group(1)) == 303

        removed = cli_json(tmp_path, "demo", "remove")
        assert removed == {
            "token_revoked": True,
            "operator_disabled": True,
            "credentials_deleted": True,
        }
        assert not (tmp_path / "DEMO-CREDENTIALS.txt").exists()
        wait_for(
            lambda: httpx.get(beat, headers=headers, timeout=10).status_code == 401,
            "the demo token refused",
        )
        assert sign_in(server.url, "D1", password.group(1)) in (401, 403)
        cli(tmp_path, "operator", "enable", "D1")  # enabled again: the printed password is dead
        assert sign_in(server.url, "D1", password.group(1)) == 401
        again = cli(tmp_path, "demo", "remove")
        assert again.stdout.strip() == "demo removed: operator D1 disabled"
    finally:
        server.stop()


# 6. CSV imports: a bad byte named at its line, a long line never held ------------------------


def account_rows(count: int) -> bytes:
    """``count`` good account rows of varied lengths, for lines 2 to count + 1."""
    return "".join(f"{810000 + n},Site {'x' * (n % 41)}\n" for n in range(count)).encode()


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_bad_byte_on_line_1502_is_named_with_the_lines_imported_before_it(
    tmp_path: Path,
) -> None:
    """Before: "not UTF-8 text after line 1222" (the text was decoded in blocks ahead of the
    reader), and nothing said that the first 1,000 rows were already stored."""
    path = tmp_path / "accounts.csv"
    path.write_bytes(b"account,name\n" + account_rows(1500) + b"819999,Caf\xe9\n810001,B\n")
    data_dir = tmp_path / "data"
    done = cli(data_dir, "account", "import", str(path), check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"error: {path}:1502: not UTF-8 text; lines 2-1,001 were imported (added 1000, "
        "updated 0, rows refused 0), nothing after line 1,001"
    )
    listed = cli_json(data_dir, "account", "list", "--limit", "5000")
    assert isinstance(listed, list) and len(listed) == 1000


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_20_mb_line_is_refused_at_its_line_without_being_held(tmp_path: Path) -> None:
    """Before: the line was read whole, and counted whole for the progress bar (252 MB for one
    import); now reading stops 64 KiB into it."""
    path = tmp_path / "accounts.csv"
    path.write_bytes(b"account,name\n810000,A\n810001," + b"x" * 20_000_000 + b"\n810002,C\n")
    data_dir = tmp_path / "data"
    first = tmp_path / "first.csv"
    first.write_bytes(b"account,name\n810009,Z\n")
    cli(data_dir, "account", "import", str(first))  # the station made before the measure
    tracemalloc.start()
    try:
        done = cli(data_dir, "account", "import", str(path), check=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, f"{peak:,} bytes at the peak"
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"error: {path}:3: a row longer than 65,536 bytes; nothing was imported"
    )
    listed = cli_json(data_dir, "account", "list")
    assert isinstance(listed, list) and [a["account_number"] for a in listed] == ["810009"]


# 7. API keys: their last use recorded, a write a minute ---------------------------------------


def test_apikey_list_shows_each_keys_last_use_written_once_a_minute(tmp_path: Path) -> None:
    """Before: ``last_used`` was never written, so a stale key could not be told from one in
    use. Now a key's first request writes it, and the next ones within the minute do not."""
    data_dir = tmp_path / "data"
    key = str(cli_json(data_dir, "apikey", "create", "--name", "crm", "--scope", "accounts:read")
              ["key"])  # type: ignore[index]  # fmt: skip
    cli(data_dir, "apikey", "create", "--name", "idle", "--scope", "accounts:read")

    def last_used() -> dict[str, object]:
        listed = cli_json(data_dir, "apikey", "list")
        assert isinstance(listed, list)
        return {k["name"]: k["last_used_us"] for k in listed}

    assert last_used() == {"crm": None, "idle": None}
    server = Server(data_dir).start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            auth = {"Authorization": f"Bearer {key}"}
            assert client.get("/api/v1/accounts", headers=auth).status_code == 200
            first = last_used()["crm"]
            assert isinstance(first, int) and first > 0
            for _ in range(20):
                assert client.get("/api/v1/accounts", headers=auth).status_code == 200
            assert last_used() == {"crm": first, "idle": None}
    finally:
        assert server.stop() == 0, server.log()
    shown = cli(data_dir, "apikey", "list").stdout
    assert "LAST USED" in shown and "never" in shown
