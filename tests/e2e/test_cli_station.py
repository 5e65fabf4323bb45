"""A station's data directory (decisions.md section 15).

Every command of the CLI, found by walking its click tree, is classified: those that make a
missing station (``serve``, ``db upgrade``, every ``add``, ``set``, ``create`` and ``import``),
those that talk to a node over HTTP, and all the others, which need a station: on a missing one
(no directory, a folder without a database) they print the one ``error: no station at PATH``
line, exit 1 and make nothing. The operator's case of the bug report as a real process: the
command run from another folder. On PostgreSQL a read works on an existing database and makes no
schema in an empty one.

One SQLite data directory, one node: a second ``serve`` exits 1 at once naming the running node,
which keeps serving, also after its worker and writer processes died and were started again; a
node killed with SIGKILL (all its processes) leaves no lock that keeps the next one from
starting.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import click
import httpx
import psycopg
import pytest
from click.testing import CliRunner, Result

from alarmhub.cli import main
from tests.support.crashing import wait_for_writer, wait_gone
from tests.support.database import drop_database, new_database
from tests.support.processes import Server, free_port, provision, wait_for

NO_STATION = "error: no station at {} (start one with alarmhub serve, or pass --data-dir)"
TALK_TO_A_NODE = {"send", "heartbeat", "query"}
CREATE = {"serve", "db upgrade"}
PROVISIONING_WORDS = {"add", "set", "create", "import"}
READ_ONLY = {"pending", "history", "in-process", "signal list", "webhook deliveries"}
READ_ONLY_WORDS = {"list", "show", "status", "log", "report"}
SAMPLE_BY_METAVAR = {"DATE": "2026-12-25"}
MORE_ARGS = {"storm resolve": ["--all"]}  # names the alarms to resolve
NOT_HERE = {"ALARMHUB_DATA_DIR": None, "ALARMHUB_DATABASE_URL": None, "ALARMHUB_SECRET_KEY": None}
ALREADY_SERVED = (
    "error: a node already serves the data directory {} (pid {}, listening on {}); one SQLite "
    "data directory has one node (several nodes share a PostgreSQL database)"
)


def _walk(command: click.Command, path: tuple[str, ...]) -> dict[str, click.Command]:
    if not isinstance(command, click.Group):
        return {" ".join(path): command}
    ctx = click.Context(command)
    found: dict[str, click.Command] = {}
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        assert sub is not None, name
        found |= _walk(sub, (*path, name))
    return found


COMMANDS = _walk(main, ())


def is_read_only(path: str) -> bool:
    """The contract's commands that only read."""
    words = path.split()
    return path in READ_ONLY or words[-1] in READ_ONLY_WORDS or words[0] == "report"


def creates(path: str) -> bool:
    """The contract's commands that make a missing station."""
    return path in CREATE or path.split()[-1] in PROVISIONING_WORDS


def opens_station(path: str) -> bool:
    return any(param.name == "data_dir" for param in COMMANDS[path].params)


NEED_A_STATION = sorted(p for p in COMMANDS if opens_station(p) and not creates(p))
MAKE_A_STATION = sorted(p for p in COMMANDS if opens_station(p) and creates(p) and p != "serve")


def sample_args(path: str) -> list[str]:
    """The command ``path`` with a value for each parameter it requires, so that it runs as far
    as opening the station."""
    args = [*path.split(), *MORE_ARGS.get(path, [])]
    for param in COMMANDS[path].params:
        if not param.required:
            continue
        if isinstance(param.type, click.Choice):
            value = str(param.type.choices[0])
        else:
            value = SAMPLE_BY_METAVAR.get(param.metavar or "", "1")
        args += [value] if isinstance(param, click.Argument) else [param.opts[0], value]
    return args


def run(data_dir: Path, args: list[str]) -> Result:
    """``alarmhub ARGS`` with ``ALARMHUB_DATA_DIR=data_dir`` and nothing else of a station set;
    a secret asked for is given on standard input."""
    env = {**NOT_HERE, "ALARMHUB_DATA_DIR": str(data_dir)}
    return CliRunner().invoke(main, args, env=env, input="pass-phrase-1\npass-phrase-1\n")


def refused(result: Result, data_dir: Path) -> bool:
    return (
        result.exit_code == 1
        and result.stdout == ""
        and result.stderr == NO_STATION.format(data_dir) + "\n"
    )


# every command classified --------------------------------------------------------------------


def test_every_command_opens_the_station_or_talks_to_a_node() -> None:
    assert {p for p in COMMANDS if not opens_station(p)} == TALK_TO_A_NODE
    assert {"pending", "history", "in-process", "signal list", "report handling"} <= set(
        NEED_A_STATION
    )
    assert not [p for p in COMMANDS if is_read_only(p) and creates(p)]
    assert {"db upgrade", "driver add", "token create", "account import", "account set"} <= set(
        MAKE_A_STATION
    )


@pytest.mark.parametrize("path", NEED_A_STATION)
def test_a_command_that_needs_a_station_refuses_a_missing_one_and_makes_nothing(
    tmp_path: Path, path: str
) -> None:
    missing = tmp_path / "missing"
    answer = run(missing, sample_args(path))
    assert refused(answer, missing), (path, answer.exit_code, answer.stdout, answer.stderr)
    assert not missing.exists()

    empty = tmp_path / "empty"
    empty.mkdir()
    answer = run(empty, sample_args(path))
    assert refused(answer, empty), (path, answer.exit_code, answer.stdout, answer.stderr)
    assert list(empty.iterdir()) == []


@pytest.mark.parametrize("path", MAKE_A_STATION)
def test_a_command_that_provisions_makes_a_missing_station(tmp_path: Path, path: str) -> None:
    missing = tmp_path / "missing"
    answer = run(missing, sample_args(path))
    assert "no station" not in answer.stderr, (path, answer.stderr)
    if answer.exit_code == 0:  # (others fail on their sample values, after the check)
        assert (missing / "alarmhub.db").stat().st_size > 0


def test_an_existing_station_is_read_where_it_is(tmp_path: Path) -> None:
    assert run(tmp_path / "var", ["driver", "add", "rx1"]).exit_code == 0
    answer = run(tmp_path / "var", ["driver", "list", "--json"])
    assert answer.exit_code == 0, answer.stderr
    assert [d["name"] for d in json.loads(answer.stdout)] == ["rx1"]


def test_a_file_that_is_not_a_station_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "alarmhub.db").touch()  # empty
    assert refused(run(tmp_path, ["pending"]), tmp_path)
    assert (tmp_path / "alarmhub.db").stat().st_size == 0
    with sqlite3.connect(tmp_path / "alarmhub.db") as other:  # a SQLite database, not alarmhub's
        other.execute("CREATE TABLE notes (text TEXT)")
    other.close()
    assert refused(run(tmp_path, ["history", "700001"]), tmp_path)
    with sqlite3.connect(tmp_path / "alarmhub.db") as other:
        tables = other.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    other.close()
    assert tables == [("notes",)]


def test_pending_run_from_another_folder_says_there_is_no_station(tmp_path: Path) -> None:
    """The bug report's operator, as a real process: no ``./var`` made, no 'no pending
    alarms'; the same for a mistyped ``--data-dir``."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_HERE}
    for args, shown in ((["pending"], "var"), (["pending", "--data-dir", "vra"], "vra")):
        answer = subprocess.run(
            [sys.executable, "-m", "alarmhub", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert answer.returncode == 1
        assert answer.stdout == ""
        assert answer.stderr == NO_STATION.format(tmp_path / shown) + "\n"
        assert list(tmp_path.iterdir()) == []


@pytest.mark.backends("postgresql")
def test_postgresql_reads_an_existing_database_and_makes_no_schema_in_an_empty_one(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "node"  # never made: the database is PostgreSQL's
    existing, empty = new_database(migrated=True), new_database()
    try:
        runner = CliRunner()
        answer = runner.invoke(
            main, ["pending"], env={**NOT_HERE, "ALARMHUB_DATA_DIR": str(data_dir),
                                    "ALARMHUB_DATABASE_URL": existing},
        )  # fmt: skip
        assert (answer.exit_code, answer.stdout) == (0, "no pending alarms\n"), answer.stderr
        answer = runner.invoke(
            main, ["pending"], env={**NOT_HERE, "ALARMHUB_DATA_DIR": str(data_dir),
                                    "ALARMHUB_DATABASE_URL": empty},
        )  # fmt: skip
        host_and_name = empty.rpartition("@")[2]
        assert answer.exit_code == 1
        assert answer.stderr == NO_STATION.format(f"postgresql://***@{host_and_name}") + "\n"
        with psycopg.connect(empty) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchone()
        assert tables == (0,)
        assert not data_dir.exists()
    finally:
        drop_database(existing)
        drop_database(empty)


# one node to a SQLite data directory ---------------------------------------------------------


def serve_again(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """A second ``alarmhub serve`` of ``data_dir`` on a port of its own, run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "alarmhub", "serve", "--listen", f"127.0.0.1:{free_port()}",
         "--data-dir", str(data_dir), "--workers", "1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def assert_refused_beside(node: Server) -> None:
    """A second serve exits 1 with the one line naming ``node``, having started nothing."""
    assert node.process is not None
    second = serve_again(node.data_dir)
    assert second.returncode == 1
    assert second.stdout == ""
    expected = ALREADY_SERVED.format(node.data_dir, node.process.pid, node.url)
    assert second.stderr.splitlines() == [expected]


def takes_a_signal(node: Server, token: str, panel: str) -> bool:
    answer = httpx.post(
        f"{node.url}/rx/site1:rx1/contact_id",
        json={"dnis": "C1", "panel": panel, "code": "E130", "zone_or_user": "1"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    return answer.status_code == 200


def test_a_second_serve_exits_at_once_and_the_first_serves_on(tmp_path: Path) -> None:
    """With two workers: neither a worker nor the writer dying, and being started again, lets
    go of the node's lock."""
    token = provision(tmp_path)
    node = Server(tmp_path, extra_args=("--workers", "2")).start()
    try:
        wait_for(lambda: len(node.worker_pids()) == 2, "both workers started", seconds=60)
        assert_refused_beside(node)
        assert takes_a_signal(node, token, "P000001")

        [worker] = node.worker_pids()[0]
        writer = wait_for_writer(node)
        os.kill(worker, signal.SIGKILL)
        os.kill(writer, signal.SIGKILL)
        wait_gone(worker)
        wait_gone(writer)
        wait_for(lambda: len(node.worker_pids()[0]) == 2, "worker 0 started again", seconds=60)
        wait_for_writer(node, not_pid=writer)
        assert_refused_beside(node)
        wait_for(lambda: takes_a_signal(node, token, "P000002"), "a signal taken", seconds=30)
        assert httpx.get(f"{node.url}/healthz", timeout=10).status_code == 200
    finally:
        node.kill()


def test_a_node_killed_with_sigkill_leaves_no_stale_lock(tmp_path: Path) -> None:
    token = provision(tmp_path)
    first = Server(tmp_path).start()
    assert first.process is not None
    processes = first.pids()
    assert len(processes) >= 2  # the node and at least its writer
    for pid in processes:
        os.kill(pid, signal.SIGKILL)
    first.process.wait(timeout=30)
    for pid in processes:
        wait_gone(pid)
    written = json.loads((tmp_path / "node.lock").read_text())
    assert written["pid"] == first.process.pid  # the dead node's file is still there

    second = Server(tmp_path).start()
    try:
        assert second.process is not None
        assert json.loads((tmp_path / "node.lock").read_text())["pid"] == second.process.pid
        assert takes_a_signal(second, token, "P000003")
        assert_refused_beside(second)
    finally:
        second.stop()
