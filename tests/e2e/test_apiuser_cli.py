"""API users of the query interface through the real CLI (decisions §3): ``alarmhub apiuser
add/list/remove``, passwords encrypted at rest with the station's key (``secret.key``, mode 0600,
or ``ALARMHUB_SECRET_KEY``), and the ``alarmhub query`` command against a real server.
"""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet, InvalidToken

from alarmhub.client import QueryClient
from alarmhub.xm import errors
from tests.support.database import db_rows
from tests.support.processes import Server, cli, cli_json, wait_for

USER, PASSWORD = "documentation", "secretpassword"
KEY_FILE = "secret.key"
KEY_ENV = "ALARMHUB_SECRET_KEY"
DEADLINE_S = 10.0


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI subprocesses inherit the environment: no station key from outside."""
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture(scope="module")
def station_dir(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory for the CLI alone (no server)."""
    return tmp_path_factory.mktemp("apiusers")


def stored(data_dir: Path, username: str) -> str:
    """The ``password_encrypted`` column of an API user."""
    [row] = db_rows(data_dir, "SELECT * FROM api_user WHERE username = ?", username)
    assert set(row.keys()) == {"username", "password_encrypted", "hmac_only", "created_us"}
    return str(row["password_encrypted"])


def file_key(data_dir: Path) -> Fernet:
    return Fernet((data_dir / KEY_FILE).read_bytes().strip())


def usernames(data_dir: Path) -> list[str]:
    """The API users in the database (read directly: quicker than ``apiuser list``)."""
    return [str(row["username"]) for row in db_rows(data_dir, "SELECT username FROM api_user")]


def assert_one_error_line(result: subprocess.CompletedProcess[str]) -> None:
    """Exit 1, nothing on stdout, exactly one ``error:`` line on stderr."""
    assert result.returncode == 1, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines


# add, list, remove ---------------------------------------------------------------------------


def test_add_prints_a_generated_password_once(station_dir: Path) -> None:
    result = cli(station_dir, "apiuser", "add", "alice")
    assert result.stderr == ""
    *text, password = result.stdout.splitlines()
    assert text == ["API user alice added; keep the password now, it is not shown again:"]
    assert len(password) >= 12
    assert password.isprintable()
    assert " " not in password

    created = cli_json(station_dir, "apiuser", "add", "bob")
    assert isinstance(created, dict)
    assert set(created) == {"username", "password"}
    assert created["username"] == "bob"
    assert len(created["password"]) >= 12
    assert created["password"] != password

    listed = cli(station_dir, "apiuser", "list").stdout + json.dumps(
        cli_json(station_dir, "apiuser", "list")
    )
    for secret, name in ((password, "alice"), (created["password"], "bob")):
        assert name in listed
        assert secret not in listed, "list shows no password"
        encrypted = stored(station_dir, name)
        assert secret not in encrypted, "the password is not stored in plain text"
        assert file_key(station_dir).decrypt(encrypted.encode()).decode() == secret

    key_file = station_dir / KEY_FILE
    assert key_file.is_file()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_list_shows_names_and_hmac_only_never_passwords(station_dir: Path) -> None:
    result = cli(station_dir, "apiuser", "add", "carol", "--password", PASSWORD, "--hmac-only")
    assert result.stdout == "API user carol added\n", "a given password is not echoed"
    cli(station_dir, "apiuser", "add", "dave", "--password", "another-password")
    listed = cli_json(station_dir, "apiuser", "list")
    assert isinstance(listed, list)
    rows = {row["username"]: row for row in listed}
    assert set(rows["carol"]) == {"username", "hmac_only", "created"}
    assert (rows["carol"]["hmac_only"], rows["dave"]["hmac_only"]) == (True, False)
    human = cli(station_dir, "apiuser", "list").stdout
    assert "carol" in human
    assert "dave" in human
    for text in (human, json.dumps(listed)):
        assert PASSWORD not in text
        assert "another-password" not in text
    assert PASSWORD not in stored(station_dir, "carol")
    assert file_key(station_dir).decrypt(stored(station_dir, "carol").encode()) == PASSWORD.encode()


def test_remove(station_dir: Path) -> None:
    cli(station_dir, "apiuser", "add", "erin", "--password", PASSWORD)
    assert "erin" in usernames(station_dir)
    result = cli(station_dir, "apiuser", "remove", "erin")
    assert result.stdout == "API user erin removed\n"
    assert "erin" not in usernames(station_dir)
    listed = cli_json(station_dir, "apiuser", "list")
    assert isinstance(listed, list)
    assert "erin" not in [row["username"] for row in listed]
    again = cli(station_dir, "apiuser", "remove", "erin", check=False)
    assert_one_error_line(again)
    assert "erin" in again.stderr


def test_duplicate_name_is_refused(station_dir: Path) -> None:
    cli(station_dir, "apiuser", "add", "frank", "--password", PASSWORD)
    before = stored(station_dir, "frank")
    result = cli(
        station_dir, "apiuser", "add", "frank", "--password", "other-password", check=False
    )
    assert_one_error_line(result)
    assert "already exists" in result.stderr
    assert stored(station_dir, "frank") == before, "the first user is kept as it was"


@pytest.mark.parametrize("name", ["bad name", "a/b", "", "x" * 65, "caf\u00e9", "semi;colon"])
def test_bad_name_is_refused(station_dir: Path, name: str) -> None:
    result = cli(station_dir, "apiuser", "add", name, "--password", PASSWORD, check=False)
    assert_one_error_line(result)
    assert "invalid username" in result.stderr
    assert name not in usernames(station_dir)


@pytest.mark.parametrize("password", ["elevenchars", "short", "tab\tin-the-password"])
def test_bad_password_is_refused(station_dir: Path, password: str) -> None:
    result = cli(station_dir, "apiuser", "add", "grace", "--password", password, check=False)
    assert_one_error_line(result)
    assert "password" in result.stderr
    assert password not in result.stderr
    assert "grace" not in usernames(station_dir)


def test_twelve_characters_are_enough(station_dir: Path) -> None:
    cli(station_dir, "apiuser", "add", "heidi", "--password", "twelve-chars")
    assert "heidi" in usernames(station_dir)


# the station's key ---------------------------------------------------------------------------


def test_environment_key_is_used_instead_of_the_file(station_dir: Path, tmp_path: Path) -> None:
    env_key = Fernet.generate_key().decode()
    cli(station_dir, "apiuser", "add", "iris", "--password", PASSWORD)  # makes the key file
    assert (station_dir / KEY_FILE).is_file()  # the file exists, yet the environment wins
    cli(station_dir, "apiuser", "add", "ivan", "--password", PASSWORD, env={KEY_ENV: env_key})
    encrypted = stored(station_dir, "ivan").encode()
    assert Fernet(env_key.encode()).decrypt(encrypted) == PASSWORD.encode()
    with pytest.raises(InvalidToken):
        file_key(station_dir).decrypt(encrypted)

    fresh = tmp_path / "fresh"
    cli(fresh, "apiuser", "add", "judy", "--password", PASSWORD, env={KEY_ENV: env_key})
    assert not (fresh / KEY_FILE).exists(), "no key file is made when the environment gives one"
    assert Fernet(env_key.encode()).decrypt(stored(fresh, "judy").encode()) == PASSWORD.encode()


def test_invalid_environment_key_is_refused(tmp_path: Path) -> None:
    result = cli(
        tmp_path,
        "apiuser",
        "add",
        "kim",
        "--password",
        PASSWORD,
        env={KEY_ENV: "not-a-key"},
        check=False,
    )
    assert_one_error_line(result)
    assert KEY_ENV in result.stderr
    assert "not-a-key" not in result.stderr


# the query command ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed_server(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose station key comes from the environment only; one API user."""
    data_dir = tmp_path_factory.mktemp("keyed")
    env = {KEY_ENV: Fernet.generate_key().decode(), "ALARMHUB_TIMEZONE": "UTC"}
    cli(data_dir, "apiuser", "add", USER, "--password", PASSWORD, env=env)
    server = Server(data_dir, env=env).start()
    try:
        yield server
    finally:
        server.stop()
    assert not (data_dir / KEY_FILE).exists()


def run_query(server: Server, *args: str, password: str = PASSWORD) -> tuple[int, object]:
    """``alarmhub query ARGS`` as the API user; its exit status and the JSON it printed."""
    env = {"ALARMHUB_URL": server.url, "ALARMHUB_PASSWORD": password}
    result = cli(server.data_dir, "query", *args, "--username", USER, env=env, check=False)
    assert result.stderr == "", result.stderr
    return result.returncode, json.loads(result.stdout)


def test_query_prints_the_answer(keyed_server: Server) -> None:
    assert run_query(keyed_server, "XMAPEND", "SOURCE=DATAENTRY") == (
        0,
        {"XMAPEND": [], "TOTAL_RECORDS": "0"},
    )
    assert run_query(keyed_server, "XMAINPRO", "--scheme", "hmac-sha256") == (
        0,
        {"XMAINPRO": [], "TOTAL_RECORDS": "0"},
    )
    assert run_query(keyed_server, "XMHIST", "ACCOUNT=700042", "HOURS=24") == (
        0,
        {"EVENT": [], "TOTAL_RECORDS": "0"},
    )


def test_query_exits_1_on_an_error_answer(keyed_server: Server) -> None:
    assert run_query(keyed_server, "XMAPEND") == (1, errors.field_invalid("SOURCE"))
    assert run_query(keyed_server, "XMHIST", "ACCOUNT=700042") == (1, errors.MALFORMED)
    assert run_query(keyed_server, "XMAINPRO", password="wrong-password") == (
        1,
        errors.AUTHENTICATION_FAILED,
    )


def test_users_added_and_removed_while_the_server_runs(keyed_server: Server) -> None:
    env = {KEY_ENV: keyed_server.env[KEY_ENV]}
    data_dir = keyed_server.data_dir
    cli(data_dir, "apiuser", "add", "late", "--password", "late-password", env=env)

    def ask() -> int:
        client = QueryClient(
            keyed_server.url, appkey="t", username="late", password="late-password"
        )
        with client:
            return client.query("XMAINPRO").status_code

    assert ask() == 200, "a new user is known at once"
    cli(data_dir, "apiuser", "remove", "late")
    wait_for(lambda: ask() == 401, "the removed user refused", DEADLINE_S, every=0.2)
    assert "unknown user" in keyed_server.log()
