"""Open/close schedules on several nodes sharing one PostgreSQL database: two nodes raise one
LATE TO CLOSE between them; a node SIGKILLed before a close time and started again after it
raises the LATE TO CLOSE it missed, once. Runs in the PostgreSQL suite only."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from alarmhub.core.alarm_types import LATE_TO_CLOSE
from alarmhub.store.engine import open_engine
from tests.support.database import drop_database, new_database
from tests.support.processes import Server, as_dict, cli, start_all, wait_for
from tests.support.schedules import STATION_ENV, closed_a_minute_ago, closing_soon

pytestmark = [pytest.mark.long, pytest.mark.backends("postgresql")]
ACCOUNT = "700012"
DUE_WITHIN_S = 60
PASSES_S = 3  # a few supervision passes of every node (each runs one a second)


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    url = new_database()
    try:
        yield {"ALARMHUB_DATABASE_URL": url, **STATION_ENV}
    finally:
        drop_database(url)


def late_to_close(env: dict[str, str]) -> int:
    engine = open_engine(env["ALARMHUB_DATABASE_URL"])
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT count(*) FROM alarm WHERE type = :t"), {"t": LATE_TO_CLOSE.type}
                ).scalar_one()
            )
    finally:
        engine.dispose()


def set_schedule(data_dir: Path, env: dict[str, str], window: list[str]) -> None:
    cli(data_dir, "schedule", "set", ACCOUNT, *window, "--no-late-to-open", env=env)


def test_two_nodes_raise_one_late_to_close(tmp_path: Path, env: dict[str, str]) -> None:
    cli(tmp_path, "account", "add", ACCOUNT, "--name", "Acme Widgets", env=env)
    nodes = start_all(Server(tmp_path, env=env) for _ in range(2))
    try:
        window, _ = closed_a_minute_ago()
        set_schedule(tmp_path, env, window)
        wait_for(lambda: late_to_close(env), "late to close raised", DUE_WITHIN_S)
        time.sleep(PASSES_S)  # both nodes judge the schedule
        assert late_to_close(env) == 1
    finally:
        for node in nodes:
            node.kill()


def test_a_node_down_over_the_close_raises_it_after_restart_once(
    tmp_path: Path, env: dict[str, str]
) -> None:
    cli(tmp_path, "account", "add", ACCOUNT, "--name", "Acme Widgets", env=env)
    node = Server(tmp_path, env=env).start()
    window, close = closing_soon()
    set_schedule(tmp_path, env, window)

    def judged() -> bool:
        shown = as_dict(_json(cli(tmp_path, "schedule", "show", ACCOUNT, "--json", env=env).stdout))
        return shown["next_check"] == close.strftime("%Y-%m-%dT%H:%M:%SZ")

    wait_for(judged, "the schedule judged up to now", DUE_WITHIN_S)
    assert node.process is not None
    node.process.send_signal(signal.SIGKILL)
    node.process.wait(timeout=30)
    wait_for(lambda: datetime.now(UTC) > close, "the close time passed", 120, every=0.5)
    time.sleep(1)
    assert late_to_close(env) == 0  # nobody was there to raise it
    restarted = Server(tmp_path, env=env).start()
    try:
        wait_for(lambda: late_to_close(env), "late to close after restart", DUE_WITHIN_S)
        time.sleep(PASSES_S)
        assert late_to_close(env) == 1
    finally:
        restarted.kill()


def _json(raw: str) -> object:
    import json

    return json.loads(raw)
