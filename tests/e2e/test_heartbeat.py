"""Heartbeats (spec §4.2, decisions §2): the operation, and supervision by a real server."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from alarmhub.core import errors
from tests.support.database import db_rows
from tests.support.processes import Server, Station, provision

SUCCESS = {"status_code": 200, "status": "success"}
DEADLINE_S = 10.0


def beat(url: str, token: str, pair: str = "site1:rx1") -> httpx.Response:
    return httpx.get(
        f"{url}/rx/{pair}/hb", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )


def gauge(url: str, name: str) -> float | None:
    answer = httpx.get(f"{url}/metrics", timeout=10)
    assert answer.status_code == 200
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return None


def heartbeat_rows(data_dir: Path) -> list[dict[str, Any]]:
    return [dict(r) for r in db_rows(data_dir, "SELECT * FROM heartbeat")]


def eventually(condition: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> None:
    """Poll ``condition`` until it holds; fail only when it never does within the deadline."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"never became true within {deadline_s} s: {what}"
        time.sleep(0.05)


def supervised_and_failing(url: str, when: str) -> None:
    """The node at ``url`` supervises the one pair from its start, before any beat, and,
    without beats, holds it failed."""
    assert gauge(url, "alarmhub_sources_supervised") == 1.0
    eventually(lambda: gauge(url, "alarmhub_sources_failed") == 1.0, f"the pair fails {when}")


# the operation -------------------------------------------------------------------------------


def test_heartbeat_success_envelope(station: Station) -> None:
    answer = beat(station.url, station.token)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json() == SUCCESS


def test_heartbeat_counts_and_supervises(station: Station) -> None:
    before = gauge(station.url, "alarmhub_heartbeats_total") or 0.0
    assert beat(station.url, station.token).status_code == 200
    assert beat(station.url, station.token).status_code == 200
    assert gauge(station.url, "alarmhub_heartbeats_total") == before + 2
    assert gauge(station.url, "alarmhub_sources_supervised") == 1.0


@pytest.mark.parametrize("pair", ["site2:rx1", "site1:rx2", "rx1:site1", "site1", "x:site1:rx1"])
def test_heartbeat_to_a_pair_not_granted(station: Station, pair: str) -> None:
    answer = beat(station.url, station.token, pair)
    assert answer.status_code == 401
    assert answer.json() == {
        "status_code": errors.HEARTBEAT_REFUSED.status_code,
        "status": "error",
        "error_code": errors.HEARTBEAT_REFUSED.error_code,
        "message": errors.HEARTBEAT_REFUSED.message,
    }


@pytest.mark.parametrize("authorization", [None, "Bearer nope", "Basic abc"])
def test_heartbeat_needs_a_valid_token(station: Station, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    answer = httpx.get(f"{station.url}/rx/site1:rx1/hb", headers=headers, timeout=10)
    assert answer.status_code == 401
    assert answer.json() == {
        "status_code": errors.AUTH_FAILED.status_code,
        "status": "error",
        "error_code": errors.AUTH_FAILED.error_code,
        "message": errors.AUTH_FAILED.message,
    }


def test_refused_heartbeat_does_not_supervise_the_pair(station: Station) -> None:
    beat(station.url, station.token)
    supervised = gauge(station.url, "alarmhub_sources_supervised")
    assert beat(station.url, station.token, "site2:rx1").status_code == 401
    assert gauge(station.url, "alarmhub_sources_supervised") == supervised


# supervision ---------------------------------------------------------------------------------


def test_supervision_fails_restores_and_survives_a_restart(tmp_path: Path) -> None:
    """Timeout 1 s, flush every 0.2 s: beat once, miss, fail; beat, restore; stop and restart:
    the pair is still supervised and still fails without beats."""
    data_dir = tmp_path
    token = provision(data_dir)
    env = {"ALARMHUB_HEARTBEAT_TIMEOUT": "1", "ALARMHUB_HEARTBEAT_FLUSH_SECONDS": "0.2"}
    server = Server(data_dir, env=env).start()
    try:
        url = server.url
        assert gauge(url, "alarmhub_sources_supervised") == 0.0
        assert gauge(url, "alarmhub_sources_failed") == 0.0
        first_beat_us = int(time.time() * 1_000_000)
        assert beat(url, token).json() == SUCCESS
        assert gauge(url, "alarmhub_sources_supervised") == 1.0

        # the last-seen time is persisted (in batches, not per beat)
        eventually(
            lambda: any(
                r["source"] == "site1"
                and r["destination"] == "rx1"
                and r["last_seen_us"] >= first_beat_us - 1_000_000
                for r in heartbeat_rows(data_dir)
            ),
            "heartbeat row persisted",
        )

        # no beat for longer than the timeout: the source fails
        eventually(
            lambda: gauge(url, "alarmhub_sources_failed") == 1.0, "alarmhub_sources_failed 1"
        )
        eventually(lambda: "source failed" in server.log(), 'log "source failed"')
        eventually(
            lambda: any(r["failed_us"] is not None for r in heartbeat_rows(data_dir)),
            "failure persisted",
        )
        assert "source restored" not in server.log()

        # the next beat restores it (beat until the gauge shows it: the timeout is only 1 s)
        def restored() -> bool:
            assert beat(url, token).json() == SUCCESS
            return gauge(url, "alarmhub_sources_failed") == 0.0

        eventually(restored, "alarmhub_sources_failed 0 after a beat")
        eventually(lambda: "source restored" in server.log(), 'log "source restored"')
    finally:
        assert server.stop() == 0
    assert "node stopped" in server.log()
    pairs = [(r["source"], r["destination"]) for r in heartbeat_rows(data_dir)]
    assert pairs == [("site1", "rx1")]

    again = Server(data_dir, env=env).start()
    try:
        supervised_and_failing(again.url, "after the restart")
        # a beat restores it on the new node as well
        eventually(
            lambda: (
                beat(again.url, token).status_code == 200
                and gauge(again.url, "alarmhub_sources_failed") == 0.0
            ),
            "restored after restart",
        )
    finally:
        assert again.stop() == 0


def test_a_new_pair_is_stored_before_its_beat_is_answered(tmp_path: Path) -> None:
    """The first beat of a pair is written at once, not with the next flush (five minutes
    here): a node killed right after answering it still leaves the pair supervised, and the
    node started next raises its failure."""
    data_dir = tmp_path
    token = provision(data_dir)
    env = {"ALARMHUB_HEARTBEAT_TIMEOUT": "1", "ALARMHUB_HEARTBEAT_FLUSH_SECONDS": "300"}
    server = Server(data_dir, env=env).start()
    try:
        assert beat(server.url, token).json() == SUCCESS
        pairs = [(r["source"], r["destination"]) for r in heartbeat_rows(data_dir)]
        assert pairs == [("site1", "rx1")]
    finally:
        server.kill()

    again = Server(data_dir, env=env).start()
    try:
        supervised_and_failing(again.url, "on the node started after the kill")
    finally:
        assert again.stop() == 0
