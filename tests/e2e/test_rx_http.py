"""The signaling interface over HTTP, against a node in this process (``station``) and, where
the HTTP server or the process itself takes part, a real ``alarmhub serve`` process
(``served_station``, or a server of the test's own).

Spec §4.1, §4.2, §7.1 and decisions §1-§2: envelopes, error codes, order of checks, token
scoping, Idempotency-Key, incident numbers, provisioning changes while the server runs, health,
metrics, split listeners and a clean stop.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from alarmhub.core import errors
from alarmhub.core.errors import IDEMPOTENCY_INVALID, IDEMPOTENCY_KEY_MAX, SignalRefusal
from tests.support.database import Record, db_rows
from tests.support.in_process import AnyStation, InProcessStation
from tests.support.processes import Server, Station, cli, cli_json, free_port, provision

SUCCESS = {"status_code": 200, "status": "success"}
GOOD: dict[str, Any] = {"dnis": "1234", "code": "E130", "area": "01", "zone_or_user": "015"}
DEADLINE_S = 10.0
BODY_LIMIT = 16384  # settings.max_body_bytes default


# helpers -------------------------------------------------------------------------------------


def envelope(refusal: SignalRefusal) -> dict[str, Any]:
    return {
        "status_code": refusal.status_code,
        "status": "error",
        "error_code": refusal.error_code,
        "message": refusal.message,
    }


def assert_refused(answer: httpx.Response, refusal: SignalRefusal) -> None:
    assert answer.status_code == refusal.status_code, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json() == envelope(refusal)


def assert_success(answer: httpx.Response) -> None:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json() == SUCCESS


def unique_panel() -> str:
    """A panel identifier no other test uses (10 alphanumerics), to find a test's own rows."""
    return "P" + uuid.uuid4().hex[:9].upper()


def signal(panel: str, **changes: Any) -> dict[str, Any]:
    return {**GOOD, "panel": panel, **changes}


query = db_rows


def rows_of(station: AnyStation, panel: str) -> list[Record]:
    return query(
        station.data_dir, "SELECT * FROM signal WHERE panel = ? ORDER BY incident_number", panel
    )


def signal_count(station: AnyStation) -> int:
    return int(query(station.data_dir, "SELECT COUNT(*) FROM signal")[0][0])


def raw_post(
    client: httpx.Client,
    content: bytes | Iterator[bytes],
    headers: dict[str, str],
    pair: str = "site1:rx1",
) -> httpx.Response:
    return client.post(f"/rx/{pair}/contact_id", content=content, headers=headers, timeout=10)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def metric(client: httpx.Client, sample_name: str, **labels: str) -> float | None:
    """The value of one sample of ``/metrics``, or None when it is not there."""
    answer = client.get("/metrics", timeout=10)
    assert answer.status_code == 200
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == sample_name and all(
                sample.labels.get(k) == v for k, v in labels.items()
            ):
                return float(sample.value)
    return None


def new_token(data_dir: Path, *args: str) -> str:
    created = cli_json(data_dir, "token", "create", "--name", f"t-{uuid.uuid4().hex[:12]}", *args)
    assert isinstance(created, dict)
    return str(created["token"])


@pytest.fixture(scope="module")
def station(in_process_station: InProcessStation) -> InProcessStation:
    """The node of most tests here runs in-process; ``served_station`` is a real process."""
    return in_process_station


@pytest.fixture(scope="module")
def other_token(station: InProcessStation) -> str:
    """A second token that may also queue to rx1."""
    return new_token(station.data_dir, "--driver", "rx1")


# success and field errors --------------------------------------------------------------------


# on a real process: the smoke test of the signaling interface (a signal accepted and stored)
def test_success_envelope_is_exact(served_station: Station) -> None:
    station = served_station
    panel = unique_panel()
    answer = station.post(signal(panel))
    assert_success(answer)
    assert answer.content == b'{"status_code":200,"status":"success"}'
    [row] = rows_of(station, panel)
    assert (row["source"], row["destination"]) == ("site1", "rx1")
    assert (row["dnis"], row["code"], row["area"], row["zone"]) == ("1234", "E130", "01", "015")
    assert row["token_name"] == "main"


FIELD_ERRORS: list[tuple[str, dict[str, Any], SignalRefusal]] = [
    ("dnis absent", {"panel": "0042", "code": "E130"}, errors.DNIS_REQUIRED),
    ("dnis empty", {"dnis": "", "panel": "0042", "code": "E130"}, errors.DNIS_REQUIRED),
    ("dnis null", {"dnis": None, "panel": "0042", "code": "E130"}, errors.DNIS_REQUIRED),
    ("dnis too long", {"dnis": "123456", "panel": "0042", "code": "E130"}, errors.DNIS_INVALID),
    ("dnis number", {"dnis": 1234, "panel": "0042", "code": "E130"}, errors.DNIS_INVALID),
    ("dnis zeros", {"dnis": "000", "panel": "0042", "code": "E130"}, errors.DNIS_INVALID),
    ("panel absent", {"dnis": "1234", "code": "E130"}, errors.PANEL_REQUIRED),
    ("panel null", {"dnis": "1234", "panel": None, "code": "E130"}, errors.PANEL_REQUIRED),
    ("panel too long", {"dnis": "1234", "panel": "A" * 11, "code": "E130"}, errors.PANEL_INVALID),
    ("panel zeros", {"dnis": "1234", "panel": "0000", "code": "E130"}, errors.PANEL_INVALID),
    ("code absent", {"dnis": "1234", "panel": "0042"}, errors.CODE_REQUIRED),
    ("code empty", {"dnis": "1234", "panel": "0042", "code": ""}, errors.CODE_REQUIRED),
    ("code unknown", {"dnis": "1234", "panel": "0042", "code": "E999"}, errors.CODE_INVALID),
    ("code qualifier", {"dnis": "1234", "panel": "0042", "code": "Q130"}, errors.CODE_INVALID),
    ("area 3 digits", {**GOOD, "panel": "0042", "area": "123"}, errors.AREA_INVALID),
    ("area letter", {**GOOD, "panel": "0042", "area": "a"}, errors.AREA_INVALID),
    ("area number", {**GOOD, "panel": "0042", "area": 1}, errors.AREA_INVALID),
    ("zone 4 digits", {**GOOD, "panel": "0042", "zone_or_user": "1000"}, errors.ZONE_INVALID),
    ("zone number", {**GOOD, "panel": "0042", "zone_or_user": 7}, errors.ZONE_INVALID),
    ("first bad wins", {"dnis": "!", "panel": "", "code": "X"}, errors.DNIS_INVALID),
]


@pytest.mark.parametrize(
    ("body", "refusal"), [(b, r) for _, b, r in FIELD_ERRORS], ids=[n for n, _, _ in FIELD_ERRORS]
)
def test_field_errors(
    station: InProcessStation, body: dict[str, Any], refusal: SignalRefusal
) -> None:
    before = signal_count(station)
    assert_refused(station.post(body), refusal)
    assert signal_count(station) == before


def test_every_signaling_error_code_of_the_spec_is_covered() -> None:
    covered = {r.error_code for _, _, r in FIELD_ERRORS} | {errors.BUFFER_REFUSED.error_code}
    spec_7_1 = {"DNIS-1", "DNIS-2", "PANEL-1", "PANEL-2", "CODE-1", "CODE-2", "AREA-1", "ZONE-1"}
    assert covered == spec_7_1 | {"BUFFER-1"}
    for refusal in (*[r for _, _, r in FIELD_ERRORS], errors.BUFFER_REFUSED):
        assert refusal.status_code == 422


# defaults and padding as stored --------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "stored"),
    [
        ({"area": None, "zone_or_user": None}, ("E130", "00", "000")),
        ({"area": "", "zone_or_user": ""}, ("E130", "00", "000")),
        ({"area": "1", "zone_or_user": "7"}, ("E130", "01", "007")),
        ({"area": "99", "zone_or_user": "42"}, ("E130", "99", "042")),
        ({"code": "r121", "zone_or_user": "999"}, ("R121", "01", "999")),
    ],
)
def test_defaults_and_padding_as_stored(
    station: InProcessStation, changes: dict[str, Any], stored: tuple[str, str, str]
) -> None:
    panel = unique_panel()
    assert_success(station.post(signal(panel, **changes)))
    [row] = rows_of(station, panel)
    assert (row["code"], row["area"], row["zone"]) == stored


def test_absent_area_and_zone_as_listed_by_the_cli(station: InProcessStation) -> None:
    panel = unique_panel()
    assert_success(station.post({"dnis": "77", "panel": panel, "code": "E110"}))
    listed = cli_json(station.data_dir, "signal", "list", "--limit", "50")
    assert isinstance(listed, list)
    [row] = [r for r in listed if r["panel"] == panel]
    assert (row["dnis"], row["code"], row["area"], row["zone"]) == ("77", "E110", "00", "000")


def test_unknown_fields_are_ignored(station: InProcessStation) -> None:
    panel = unique_panel()
    assert_success(station.post(signal(panel, extra="x", nested={"a": [1, 2]})))
    assert len(rows_of(station, panel)) == 1


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-8"],
)
def test_content_type_is_tolerated_for_a_json_object(
    station: InProcessStation, content_type: str | None
) -> None:
    panel = unique_panel()
    headers = bearer(station.token)
    if content_type is not None:
        headers["Content-Type"] = content_type
    content = f'{{"dnis":"1234","panel":"{panel}","code":"E130"}}'.encode()
    answer = raw_post(station.client, content, headers)
    if content_type is None:
        assert "content-type" not in answer.request.headers
    assert_success(answer)
    assert len(rows_of(station, panel)) == 1


# authentication ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "Bearer not-a-token",
        "Token {token}",
        "{token}",
        "Bearer {token}x",
    ],
    ids=[
        "missing",
        "empty header",
        "scheme only",
        "basic",
        "unknown token",
        "other scheme",
        "no scheme",
        "altered token",
    ],
)
def test_auth_refusals(station: InProcessStation, authorization: str | None) -> None:
    headers = (
        {}
        if authorization is None
        else {"Authorization": authorization.format(token=station.token)}
    )
    before = signal_count(station)
    answer = raw_post(station.client, b'{"dnis":"1234","panel":"0042","code":"E130"}', headers)
    assert_refused(answer, errors.AUTH_FAILED)
    assert answer.headers["www-authenticate"] == "Bearer"
    assert signal_count(station) == before


def raw_http(url: str, request: bytes) -> tuple[int, dict[str, Any]]:
    """Send bytes as they are (httpx refuses some header values) and read status and JSON body."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body)


# on a real process: raw bytes through the HTTP server's own parsing of the header
@pytest.mark.parametrize("value", [b"Bearer ", b"Bearer    ", b"Bearer \t "])
def test_empty_bearer_token_is_refused(served_station: Station, value: bytes) -> None:
    station = served_station
    body = b'{"dnis":"1234","panel":"0042","code":"E130"}'
    request = (
        b"POST /rx/site1:rx1/contact_id HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nAuthorization: " + value + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    status, answer = raw_http(station.url, request)
    assert status == errors.AUTH_FAILED.status_code
    assert answer == envelope(errors.AUTH_FAILED)


def test_bearer_scheme_is_case_insensitive(station: InProcessStation) -> None:
    panel = unique_panel()
    answer = raw_post(
        station.client,
        f'{{"dnis":"1234","panel":"{panel}","code":"E130"}}'.encode(),
        {"Authorization": f"bearer {station.token}"},
    )
    assert_success(answer)


def test_token_created_while_running_works_on_first_request(station: InProcessStation) -> None:
    token = new_token(station.data_dir, "--driver", "rx1")
    panel = unique_panel()
    assert_success(station.post(signal(panel), token=token))
    [row] = rows_of(station, panel)
    assert row["token_name"].startswith("t-")


def test_token_revoked_while_running_is_refused(station: InProcessStation) -> None:
    name = f"rev-{uuid.uuid4().hex[:8]}"
    created = cli_json(station.data_dir, "token", "create", "--name", name, "--driver", "rx1")
    assert isinstance(created, dict)
    token = str(created["token"])
    assert_success(station.post(signal(unique_panel()), token=token))  # now cached by the server
    cli(station.data_dir, "token", "revoke", name)
    deadline = time.monotonic() + DEADLINE_S
    while True:
        panel = unique_panel()
        answer = station.post(signal(panel), token=token)
        if answer.status_code != 200:
            break
        assert time.monotonic() < deadline, "a revoked token was still accepted after 10 s"
        time.sleep(0.1)
    assert_refused(answer, errors.AUTH_FAILED)
    assert rows_of(station, panel) == []
    # and it stays refused, for heartbeats as well (AUTH-1, not HB-1)
    assert_refused(station.post(signal(unique_panel()), token=token), errors.AUTH_FAILED)
    hb = station.client.get("/rx/site1:rx1/hb", headers=bearer(token), timeout=10)
    assert_refused(hb, errors.AUTH_FAILED)


def test_driver_added_while_running_is_usable_at_once(station: InProcessStation) -> None:
    driver = f"rx-{uuid.uuid4().hex[:8]}"
    cli(station.data_dir, "driver", "add", driver)
    token = new_token(station.data_dir, "--driver", driver)
    panel = unique_panel()
    assert_success(station.post(signal(panel), pair=f"site9:{driver}", token=token))
    [row] = rows_of(station, panel)
    assert (row["source"], row["destination"]) == ("site9", driver)
    # the new token was granted only the new driver
    assert_refused(station.post(signal(unique_panel()), token=token), errors.BUFFER_REFUSED)


# token scoping and the source:destination pair ----------------------------------------------


def test_token_cannot_queue_to_another_or_an_unknown_driver(station: InProcessStation) -> None:
    before = signal_count(station)
    granted_elsewhere = station.post(signal(unique_panel()), pair="site1:rx2")
    unknown_driver = station.post(signal(unique_panel()), pair="site1:nosuchdriver")
    assert_refused(granted_elsewhere, errors.BUFFER_REFUSED)
    assert_refused(unknown_driver, errors.BUFFER_REFUSED)
    assert granted_elsewhere.content == unknown_driver.content  # no hint whether it exists
    assert signal_count(station) == before


def test_token_cannot_heartbeat_a_pair_it_was_not_granted(station: InProcessStation) -> None:
    for pair in ("site2:rx1", "site1:rx2", "rx1:site1", "site1:rx1:x", "site1"):
        answer = station.client.get(f"/rx/{pair}/hb", headers=bearer(station.token))
        assert_refused(answer, errors.HEARTBEAT_REFUSED)
        assert answer.status_code == 401
    assert_success(station.client.get("/rx/site1:rx1/hb", headers=bearer(station.token)))


def test_pair_is_split_at_the_last_colon(station: InProcessStation) -> None:
    panel = unique_panel()
    # split at the first colon the destination would be "rx2:rx1", which is not granted
    assert_success(station.post(signal(panel), pair="site1:rx2:rx1"))
    [row] = rows_of(station, panel)
    assert (row["source"], row["destination"]) == ("site1:rx2", "rx1")
    # split at the last colon the destination of "rx1:site1" is "site1", not rx1
    assert_refused(station.post(signal(unique_panel()), pair="rx1:site1"), errors.BUFFER_REFUSED)


@pytest.mark.parametrize("pair", ["rx1", ":rx1", "site1:", "site1:rx1:"])
def test_malformed_pairs_are_refused_like_a_forbidden_driver(
    station: InProcessStation, pair: str
) -> None:
    assert_refused(station.post(signal(unique_panel()), pair=pair), errors.BUFFER_REFUSED)


# bodies --------------------------------------------------------------------------------------


def _padded_object(size: int, panel: str) -> bytes:
    """A valid signal body of exactly ``size`` bytes (an ignored padding field)."""
    head = f'{{"dnis":"1234","panel":"{panel}","code":"E130","pad":"'.encode()
    tail = b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


@pytest.mark.parametrize(
    "content",
    [
        b"{",
        b'{"dnis": "1234",}',
        b"[]",
        b'[{"dnis":"1234","panel":"0042","code":"E130"}]',
        b'"a string"',
        b"123",
        b"null",
        b"true",
        b"",
        b"\xff\xfe{}",
        b"dnis=1234&panel=0042&code=E130",
    ],
    ids=[
        "invalid json",
        "trailing comma",
        "empty array",
        "array of object",
        "json string",
        "json number",
        "json null",
        "json true",
        "empty body",
        "not utf-8",
        "form encoded",
    ],
)
def test_body_must_be_a_json_object(station: InProcessStation, content: bytes) -> None:
    assert_refused(
        raw_post(
            station.client, content, {**bearer(station.token), "Content-Type": "application/json"}
        ),
        errors.BODY_INVALID,
    )


def test_body_at_the_limit_is_accepted_and_over_it_refused(station: InProcessStation) -> None:
    panel = unique_panel()
    at_limit = _padded_object(BODY_LIMIT, panel)
    assert len(at_limit) == BODY_LIMIT
    assert_success(raw_post(station.client, at_limit, bearer(station.token)))
    assert len(rows_of(station, panel)) == 1

    panel = unique_panel()
    over = _padded_object(BODY_LIMIT + 1, panel)
    assert_refused(raw_post(station.client, over, bearer(station.token)), errors.BODY_INVALID)
    big = _padded_object(100_000, panel)
    assert_refused(raw_post(station.client, big, bearer(station.token)), errors.BODY_INVALID)
    assert rows_of(station, panel) == []


# on a real process: the chunked transfer coding is decoded by the HTTP server
def test_oversize_chunked_body_is_refused(served_station: Station) -> None:
    station = served_station
    panel = unique_panel()
    body = _padded_object(BODY_LIMIT + 1000, panel)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    answer = raw_post(station.client, chunks(), bearer(station.token))
    assert "content-length" not in answer.request.headers
    assert_refused(answer, errors.BODY_INVALID)
    assert rows_of(station, panel) == []


# on a real process: the chunked transfer coding is decoded by the HTTP server
def test_small_chunked_body_is_accepted(served_station: Station) -> None:
    station = served_station
    panel = unique_panel()
    body = f'{{"dnis":"1234","panel":"{panel}","code":"E130"}}'.encode()
    answer = raw_post(station.client, iter([body[:10], body[10:]]), bearer(station.token))
    assert_success(answer)
    assert len(rows_of(station, panel)) == 1


# order of checks -----------------------------------------------------------------------------


def test_order_auth_before_body(station: InProcessStation) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        assert_refused(raw_post(station.client, b"[not json", headers), errors.AUTH_FAILED)


def test_order_auth_before_fields_and_driver(station: InProcessStation) -> None:
    headers = {"Authorization": "Bearer wrong", "Content-Type": "application/json"}
    assert_refused(raw_post(station.client, b'{"dnis":""}', headers), errors.AUTH_FAILED)
    assert_refused(
        raw_post(station.client, b'{"dnis":""}', headers, pair="site1:nosuch"), errors.AUTH_FAILED
    )


def test_order_auth_before_idempotency_key(station: InProcessStation) -> None:
    headers = {"Authorization": "Bearer wrong", "Idempotency-Key": "k" * 300}
    body = f'{{"dnis":"1234","panel":"{unique_panel()}","code":"E130"}}'.encode()
    assert_refused(raw_post(station.client, body, headers), errors.AUTH_FAILED)


def test_order_body_before_driver(station: InProcessStation) -> None:
    headers = bearer(station.token)
    assert_refused(raw_post(station.client, b"[]", headers, pair="site1:rx2"), errors.BODY_INVALID)
    assert_refused(
        raw_post(station.client, b"{", headers, pair="site1:nosuch"), errors.BODY_INVALID
    )


@pytest.mark.parametrize("pair", ["site1:rx2", "site1:nosuch", "nocolon"])
def test_order_fields_before_driver(station: InProcessStation, pair: str) -> None:
    assert_refused(station.post({"panel": "0042", "code": "E130"}, pair=pair), errors.DNIS_REQUIRED)
    assert_refused(
        station.post({"dnis": "1", "panel": "0042", "code": "E130", "area": "x"}, pair=pair),
        errors.AREA_INVALID,
    )


# Idempotency-Key -----------------------------------------------------------------------------


def test_idempotent_retry_returns_the_same_answer_and_stores_nothing_new(
    station: InProcessStation,
) -> None:
    panel = unique_panel()
    key = f"key-{uuid.uuid4()}"
    first = station.post(signal(panel), headers={"Idempotency-Key": key})
    assert_success(first)
    for _ in range(3):
        retry = station.post(signal(panel), headers={"Idempotency-Key": key})
        assert_success(retry)
        assert retry.content == first.content
    assert len(rows_of(station, panel)) == 1
    [keyed] = query(station.data_dir, "SELECT * FROM idempotency WHERE idempotency_key = ?", key)
    assert keyed["token_name"] == "main"
    assert keyed["incident_number"] == rows_of(station, panel)[0]["incident_number"]


def test_another_key_or_no_key_is_another_signal(station: InProcessStation) -> None:
    panel = unique_panel()
    assert_success(station.post(signal(panel), headers={"Idempotency-Key": f"a-{uuid.uuid4()}"}))
    assert_success(station.post(signal(panel), headers={"Idempotency-Key": f"b-{uuid.uuid4()}"}))
    assert_success(station.post(signal(panel)))
    assert_success(station.post(signal(panel)))
    assert len(rows_of(station, panel)) == 4


def test_same_key_under_another_token_is_another_signal(
    station: InProcessStation, other_token: str
) -> None:
    panel = unique_panel()
    key = f"shared-{uuid.uuid4()}"
    assert_success(station.post(signal(panel), headers={"Idempotency-Key": key}))
    assert_success(station.post(signal(panel), token=other_token, headers={"Idempotency-Key": key}))
    assert_success(station.post(signal(panel), token=other_token, headers={"Idempotency-Key": key}))
    stored = rows_of(station, panel)
    assert len(stored) == 2
    assert stored[0]["token_name"] == "main"
    assert stored[1]["token_name"] != "main"


def test_concurrent_requests_with_one_key_store_one_signal(station: InProcessStation) -> None:
    panel = unique_panel()
    key = f"burst-{uuid.uuid4()}"
    answers: list[httpx.Response] = []
    lock = threading.Lock()
    start = threading.Barrier(24)

    def send() -> None:
        start.wait()
        answer = station.client.post(
            "/rx/site1:rx1/contact_id",
            json=signal(panel),
            headers={**bearer(station.token), "Idempotency-Key": key},
        )
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=send) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(answers) == 24
    for answer in answers:
        assert_success(answer)
    assert len(rows_of(station, panel)) == 1


@pytest.mark.parametrize(
    "key", ["k" * (IDEMPOTENCY_KEY_MAX + 1), "k" * 1000, ""], ids=["256", "1000", "empty"]
)
def test_invalid_idempotency_key(station: InProcessStation, key: str) -> None:
    panel = unique_panel()
    answer = station.post(signal(panel), headers={"Idempotency-Key": key})
    assert_refused(answer, IDEMPOTENCY_INVALID)
    assert answer.json()["error_code"] == "IDEMPOTENCY-1"
    assert rows_of(station, panel) == []


def test_longest_idempotency_key_is_accepted(station: InProcessStation) -> None:
    panel = unique_panel()
    key = "k" * (IDEMPOTENCY_KEY_MAX - 36) + str(uuid.uuid4())
    assert len(key) == IDEMPOTENCY_KEY_MAX
    assert_success(station.post(signal(panel), headers={"Idempotency-Key": key}))
    assert_success(station.post(signal(panel), headers={"Idempotency-Key": key}))
    assert len(rows_of(station, panel)) == 1


# incident numbers ----------------------------------------------------------------------------


def test_incident_numbers_increase_in_order_of_acceptance(station: InProcessStation) -> None:
    panel = unique_panel()
    for zone in range(1, 8):
        assert_success(station.post(signal(panel, zone_or_user=str(zone))))
    stored = query(
        station.data_dir, "SELECT incident_number, zone FROM signal WHERE panel = ?", panel
    )
    by_zone = sorted(stored, key=lambda r: r["zone"])
    numbers = [r["incident_number"] for r in by_zone]
    assert [r["zone"] for r in by_zone] == [f"{z:03d}" for z in range(1, 8)]
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == len(numbers)


def test_incident_numbers_are_unique_under_concurrency(station: InProcessStation) -> None:
    panel = unique_panel()
    highest_before = query(station.data_dir, "SELECT MAX(incident_number) FROM signal")[0][0] or 0

    def send(zone: int) -> None:
        assert_success(station.post(signal(panel, zone_or_user=str(zone))))

    threads = [threading.Thread(target=send, args=(zone,)) for zone in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    stored = rows_of(station, panel)
    numbers = [r["incident_number"] for r in stored]
    assert len(stored) == 30
    assert len(set(numbers)) == 30
    assert min(numbers) > highest_before
    total, distinct = query(
        station.data_dir, "SELECT COUNT(*), COUNT(DISTINCT incident_number) FROM signal"
    )[0]
    assert total == distinct


# routing, health, metrics --------------------------------------------------------------------


def test_healthz(station: InProcessStation) -> None:
    answer = station.client.get("/healthz", timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}


@pytest.mark.parametrize("path", ["/nope", "/rx/site1:rx1/other", "/rx/site1:rx1", "/rx"])
def test_unknown_path_is_404_json(station: InProcessStation, path: str) -> None:
    answer = station.client.get(path, headers=bearer(station.token), timeout=10)
    assert answer.status_code == 404
    body = answer.json()
    assert body["status"] == "error"
    assert body["status_code"] == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "contact_id"), ("PUT", "contact_id"), ("POST", "hb"), ("DELETE", "hb")],
)
def test_wrong_method_is_405_json(station: InProcessStation, method: str, path: str) -> None:
    answer = station.client.request(
        method, f"/rx/site1:rx1/{path}", headers=bearer(station.token), timeout=10
    )
    assert answer.status_code == 405
    body = answer.json()
    assert body["status"] == "error"
    assert body["status_code"] == 405


def test_metrics(station: InProcessStation) -> None:
    client = station.client
    accepted = "alarmhub_signals_accepted_total"
    refused = "alarmhub_signals_refused_total"
    before_accepted = metric(client, accepted, interface="contact_id") or 0.0
    before_code = metric(client, refused, interface="contact_id", error_code="CODE-2") or 0.0
    before_auth = metric(client, refused, interface="contact_id", error_code="AUTH-1") or 0.0
    before_beats = metric(client, "alarmhub_heartbeats_total") or 0.0

    assert_success(station.post(signal(unique_panel())))
    assert_refused(station.post(signal(unique_panel(), code="E999")), errors.CODE_INVALID)
    assert_refused(station.post(signal(unique_panel(), code="X130")), errors.CODE_INVALID)
    assert_refused(raw_post(client, b"{}", {}), errors.AUTH_FAILED)
    assert_success(client.get("/rx/site1:rx1/hb", headers=bearer(station.token)))

    assert metric(client, accepted, interface="contact_id") == before_accepted + 1
    assert metric(client, refused, interface="contact_id", error_code="CODE-2") == before_code + 2
    assert metric(client, refused, interface="contact_id", error_code="AUTH-1") == before_auth + 1
    assert metric(client, "alarmhub_heartbeats_total") == before_beats + 1
    batches = metric(client, "alarmhub_commit_batch_size_count")
    assert batches is not None and batches >= 1
    commit_seconds = metric(client, "alarmhub_commit_seconds_count")
    assert commit_seconds is not None and commit_seconds >= 1
    assert metric(client, "alarmhub_commit_batch_size_bucket", le="+Inf") == batches


# listeners and stopping ----------------------------------------------------------------------


def test_split_listeners_then_sigterm_stops_cleanly(tmp_path: Path) -> None:
    """``--rx-listen``/``--rest-listen`` on two ports (``--listen`` set to the first: the
    fixture always passes it); then SIGTERM: exit code 0, "node stopped", nothing lost."""
    token = provision(tmp_path)
    rx_port, rest_port = free_port(), free_port()
    while rest_port == rx_port:
        rest_port = free_port()
    server = Server(
        tmp_path,
        port=rx_port,
        extra_args=(
            "--rx-listen",
            f"127.0.0.1:{rx_port}",
            "--rest-listen",
            f"127.0.0.1:{rest_port}",
        ),
    ).start()
    rx_url, rest_url = f"http://127.0.0.1:{rx_port}", f"http://127.0.0.1:{rest_port}"
    try:
        body = {"dnis": "1234", "panel": "0042", "code": "E130"}
        assert_success(
            httpx.post(f"{rx_url}/rx/site1:rx1/contact_id", json=body, headers=bearer(token))
        )
        assert_success(httpx.get(f"{rx_url}/rx/site1:rx1/hb", headers=bearer(token)))
        on_rest = httpx.post(
            f"{rest_url}/rx/site1:rx1/contact_id", json=body, headers=bearer(token)
        )
        assert on_rest.status_code == 404
        assert httpx.get(f"{rest_url}/rx/site1:rx1/hb", headers=bearer(token)).status_code == 404
        for url in (rx_url, rest_url):
            health = httpx.get(f"{url}/healthz", timeout=10)
            assert health.status_code == 200
            assert health.json() == {"status": "ok"}
            assert httpx.get(f"{url}/metrics", timeout=10).status_code == 200
    finally:
        code = server.stop()
    assert code == 0
    log = server.log()
    assert "stop requested" in log
    assert "node stopped" in log
    assert int(query(tmp_path, "SELECT COUNT(*) FROM signal")[0][0]) == 1
    for url in (rx_url, rest_url):
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{url}/healthz", timeout=2)
