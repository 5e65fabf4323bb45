"""The operator console through a real server: sign-in, throttling, cookie flags, CSRF, sessions,
every action of the JSON API with its refusals, bad input, and the live feed (server-sent
events). Operators are created with ``store.operations.add_operator`` on the station's database;
signals come through the signaling interface.

Routing, hand-out and the feed run in the server, so every check of their effect polls with a
generous deadline; no test asserts how long anything took.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import orjson
import pytest
from sqlalchemy import select, text, update

from alarmhub.clock import now_us
from alarmhub.store import handling, queries, resolutions
from alarmhub.store import schema as s
from alarmhub.store.commit import lock_incidents
from alarmhub.store.engine import write_transaction
from tests.support.console_client import PASSWORD, Console, Row, queue_rows, read_events
from tests.support.console_station import (
    OPERATORS,
    Hub,
    provision_console,
    refused,
    served,
)
from tests.support.processes import wait_for


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir = tmp_path_factory.mktemp("console")
    token, engine = provision_console(data_dir)
    with served(data_dir, token, engine) as hub:
        yield hub


@pytest.fixture(autouse=True)
def nobody_receiving(hub: Hub) -> Iterator[None]:
    """After each test, no operator is left receiving: alarms of the next test stay pending
    until it hands them out itself."""
    yield
    with write_transaction(hub.engine) as conn:
        lock_incidents(conn)  # as the console does: see operations.on_queues
        for status in queries.operator_statuses(conn):
            if status["receiving"]:
                handling.set_receiving(conn, status["code"], False, now_us())


def not_receiving(console: Console) -> None:
    data = console.ok("/receiving", {"receiving": False})
    assert data["operator"]["receiving"] is False


def clear_queues(console: Console, code: str) -> None:
    """Take every pending alarm and resolve every alarm in process with ``code``."""
    snapshot = console.snapshot()
    for row in queue_rows(snapshot, "pending"):
        console.ok(f"/alarms/{row['alarm_id']}/take")
    for row in queue_rows(console.snapshot(), "in_process"):
        if row["opr"] == code:
            console.ok(f"/alarms/{row['alarm_id']}/resolve", {"resolution": "TEST"})


# sign-in ------------------------------------------------------------------------------------


def test_the_console_sends_you_to_sign_in_first(hub: Hub) -> None:
    console = hub.console()
    answer = console.client.get("/console")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/console/login"
    form = console.client.get("/console/login")
    assert form.status_code == 200
    assert '<form method="post" action="/console/login">' in form.text
    cookie = form.headers["set-cookie"]
    assert cookie.startswith("alarmhub_login=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/console/login" in cookie
    assert "script-src 'self'" in form.headers["content-security-policy"]
    assert form.headers["x-frame-options"] == "DENY"


def test_sign_in_sets_a_strict_http_only_session_cookie_and_signs_on(hub: Hub) -> None:
    console = hub.console()
    answer = console.sign_in_answer("OP3")
    assert answer.status_code == 303, answer.text
    session = next(c for c in answer.headers.get_list("set-cookie") if "alarmhub_session=" in c)
    assert "HttpOnly" in session
    assert "SameSite=strict" in session
    assert "Path=/console" in session
    assert "Secure" not in session, "the request came over plain http"
    token = console.client.cookies["alarmhub_session"]
    operator = hub.operator("OP3")
    assert operator["signed_on_us"] is not None
    assert operator["receiving"]
    page = console.client.get("/console")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "no-store"
    assert token not in page.text, "the session token is never rendered into the page"
    assert 'name="csrf-token"' in page.text
    assert "Oona Operator" in page.text
    assert console.client.get("/console/login").status_code == 303, "signed in already"


def test_the_session_cookie_is_secure_when_the_request_came_over_https(hub: Hub) -> None:
    console = hub.console()
    # the node trusts X-Forwarded-Proto from 127.0.0.1, like a TLS proxy on the same machine
    answer = console.sign_in_answer("OP4", headers={"X-Forwarded-Proto": "https"})
    assert answer.status_code == 303, answer.text
    session = next(c for c in answer.headers.get_list("set-cookie") if "alarmhub_session=" in c)
    assert "Secure" in session
    assert "HttpOnly" in session


def test_wrong_password_and_unknown_operator_are_refused_alike(hub: Hub) -> None:
    console = hub.console()
    wrong = console.sign_in_answer("OP2", "not-the-password")
    unknown = console.sign_in_answer("ZZZ", "not-the-password")
    for answer in (wrong, unknown):
        assert answer.status_code == 401, answer.text
        assert "wrong operator code or password" in answer.text
        assert "alarmhub_session" not in answer.headers.get("set-cookie", "")
    assert hub.operator("OP2")["signed_on_us"] is None
    assert console.get("/me").status_code == 401


def test_failures_throttle_the_address_and_code_not_the_operator(hub: Hub) -> None:
    """Five failures of one (address, code) pair, then 429 for that pair only: the operator
    still signs in from another address (no lock-out that anyone could cause)."""
    console = hub.console()
    elsewhere = {"X-Forwarded-For": "10.20.0.1"}  # the node trusts 127.0.0.1 as a proxy
    for _ in range(5):
        assert console.sign_in_answer("LCK", "wrong-password", elsewhere).status_code == 401
    throttled = console.sign_in_answer("LCK", PASSWORD, elsewhere)
    assert throttled.status_code == 429, throttled.text
    assert "Too many failed sign-ins" in throttled.text
    assert "alarmhub_session" not in throttled.headers.get("set-cookie", "")
    assert hub.operator("LCK")["signed_on_us"] is None
    assert console.sign_in_answer("LCK", PASSWORD).status_code == 303


def test_a_disabled_operator_cannot_sign_in(hub: Hub) -> None:
    answer = hub.console().sign_in_answer("DIS")
    assert answer.status_code == 401, answer.text
    assert "wrong operator code or password" in answer.text, "nothing tells it is disabled"
    assert "alarmhub_session" not in answer.headers.get("set-cookie", "")


def test_the_sign_in_form_needs_its_double_submit_token(hub: Hub) -> None:
    console = hub.console()
    form = {"code": "OP2", "password": PASSWORD}
    no_token = console.client.post("/console/login", data=form)
    assert no_token.status_code == 403, no_token.text
    console.login_form()  # sets the cookie; the field below does not match it
    mismatch = console.client.post("/console/login", data={**form, "csrf": "forged"})
    assert mismatch.status_code == 403, mismatch.text
    for answer in (no_token, mismatch):
        assert "alarmhub_session" not in answer.headers.get("set-cookie", "")
    assert hub.operator("OP2")["signed_on_us"] is None


def test_the_page_escapes_what_it_shows(hub: Hub) -> None:
    page = hub.console().sign_in("XSS").client.get("/console")
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


# sessions and CSRF --------------------------------------------------------------------------

READS = ["/me", "/snapshot", "/alarms/1", "/resolutions", "/operators", "/stats"]
WRITES = [
    "/take-next",
    "/alarms/1/take",
    "/alarms/1/take-over",
    "/alarms/1/call",
    "/alarms/1/note",
    "/alarms/1/hold",
    "/alarms/1/resolve",
    "/receiving",
]


def test_every_api_and_the_event_stream_refuse_without_a_session(hub: Hub) -> None:
    for cookies in ({}, {"alarmhub_session": "forged-token"}):
        client = httpx.Client(base_url=hub.url, cookies=cookies, timeout=30)
        try:
            for path in READS:
                refused(client.get(f"/console/api{path}"), 401, "CONSOLE-SESSION")
            for path in WRITES:
                refused(client.post(f"/console/api{path}", json={}), 401, "CONSOLE-SESSION")
            refused(client.get("/console/events"), 401, "CONSOLE-SESSION")
            refused(client.post("/console/logout"), 401, "CONSOLE-SESSION")
        finally:
            client.close()


def test_state_changing_requests_need_the_csrf_token(hub: Hub) -> None:
    console = hub.console().sign_in("OP4")
    assert hub.operator("OP4")["receiving"]
    for csrf in ("", "forged", console.csrf[:-1]):
        for path in WRITES:
            refused(console.post(path, {"receiving": False}, csrf=csrf), 403, "CONSOLE-CSRF")
        answer = console.client.post("/console/logout", headers={"X-CSRF-Token": csrf})
        refused(answer, 403, "CONSOLE-CSRF")
    assert hub.operator("OP4")["receiving"], "nothing changed"
    assert console.get("/me").status_code == 200, "the session is still valid"
    # the token of one session is no good for another
    other = hub.console().sign_in("OP4")
    refused(console.post("/receiving", {"receiving": False}, csrf=other.csrf), 403, "CONSOLE-CSRF")


def test_sign_out_signs_off_returns_alarms_and_ends_the_session(hub: Hub) -> None:
    console = hub.console().sign_in("OP3")
    not_receiving(console)
    hub.signal(21, "E130", 1)
    alarm_id = hub.alarm_of(21, 1)["alarm_id"]
    console.ok(f"/alarms/{alarm_id}/take")
    token = console.client.cookies["alarmhub_session"]
    answer = console.client.post("/console/logout", headers={"X-CSRF-Token": console.csrf})
    assert answer.status_code == 200, answer.text
    assert answer.json()["returned_to_pending"] == 1
    assert "alarmhub_session=" in answer.headers["set-cookie"]
    assert "Max-Age=0" in answer.headers["set-cookie"]
    assert hub.operator("OP3")["signed_on_us"] is None
    assert hub.alarm(alarm_id)["state"] == "pending"
    # the old cookie, replayed, is dead
    replay = httpx.Client(base_url=hub.url, timeout=30)
    replay.cookies.set("alarmhub_session", token)
    try:
        refused(replay.get("/console/api/me"), 401, "CONSOLE-SESSION")
    finally:
        replay.close()
    refused(console.get("/me"), 401, "CONSOLE-SESSION")


# the life cycle through the API -------------------------------------------------------------


def test_an_alarm_from_take_to_resolve_with_every_refusal(hub: Hub) -> None:
    op1 = hub.console().sign_in("OP1")
    op2 = hub.console().sign_in("OP2")
    sup = hub.console().sign_in("SUP")
    for console in (op1, op2, sup):
        not_receiving(console)
    hub.signal(1, "E130", 11)
    alarm_id = hub.alarm_of(1, 11)["alarm_id"]
    pending = queue_rows(op1.snapshot(), "pending")
    assert alarm_id in [row["alarm_id"] for row in pending]

    refused(op1.post("/alarms/999999999/take"), 404, "OPS-NOTFOUND")
    taken = op1.ok(f"/alarms/{alarm_id}/take")["alarm"]
    assert (taken["state"], taken["opr"]) == ("in_process", "OP1")
    assert "OP1" in refused(op2.post(f"/alarms/{alarm_id}/take"), 409, "OPS-TAKEN")
    refused(op2.post(f"/alarms/{alarm_id}/call", {"text": "mine?"}), 409, "OPS-NOTYOURS")

    refused(op1.post(f"/alarms/{alarm_id}/call", {"text": "   "}), 422, "OPS-NOTE")
    op1.ok(f"/alarms/{alarm_id}/call", {"text": "called keyholder J. Doe 555-0100: no answer"})
    assert hub.alarm(alarm_id)["first_call_us"] is not None
    op1.ok(f"/alarms/{alarm_id}/note", {"text": "dog inside the premises"})

    refused(op1.post(f"/alarms/{alarm_id}/hold", {"minutes": 0, "reason": "x"}), 422, "OPS-HOLD")
    refused(op1.post(f"/alarms/{alarm_id}/hold", {"minutes": 5, "reason": " "}), 422, "OPS-HOLD")
    held = op1.ok(f"/alarms/{alarm_id}/hold", {"minutes": 5, "reason": "waiting for call back"})
    assert held["hold_until_us"] > now_us()
    assert hub.alarm(alarm_id)["state"] == "on_hold"
    on_hold = queue_rows(op1.snapshot(), "on_hold")
    assert [r["hold_reason"] for r in on_hold if r["alarm_id"] == alarm_id] == [
        "waiting for call back"
    ]
    refused(op1.post(f"/alarms/{alarm_id}/call", {"text": "again"}), 409, "OPS-NOTYOURS")

    refused(op2.post(f"/alarms/{alarm_id}/take-over"), 403, "OPS-ROLE")
    over = sup.ok(f"/alarms/{alarm_id}/take-over")["alarm"]
    assert (over["state"], over["opr"]) == ("in_process", "SUP")
    refused(op1.post(f"/alarms/{alarm_id}/resolve", {"resolution": "FA"}), 409, "OPS-NOTYOURS")

    codes = {r["code"] for r in sup.get("/resolutions").json()["resolutions"]}
    assert "FA" in codes
    answer = sup.post(f"/alarms/{alarm_id}/resolve", {"resolution": "NOPE"})
    refused(answer, 422, "OPS-RESOLUTION")
    sup.ok(f"/alarms/{alarm_id}/resolve", {"resolution": "FA", "note": "user error, confirmed"})
    resolved = hub.alarm(alarm_id)
    assert (resolved["state"], resolved["resolution"]) == ("resolved", "FA")

    detail = op1.get(f"/alarms/{alarm_id}").json()
    assert detail["alarm"]["state"] == "resolved"
    assert detail["account"]["company_name"] == "Subscriber 1"
    log = [e for e in detail["events"] if e["pr_checksum"] == "OPERATOR"]
    assert [e["type"] for e in log] == ["TAKE", "CALL", "NOTE", "HOLD", "TKOVR", "RSLV"]
    assert "user error, confirmed" in log[-1]["note"]
    assert [e["code"] for e in detail["events"] if e["pr_checksum"] != "OPERATOR"] == ["E130"]
    assert any(e["type"] == "RSLV" for e in detail["history"]), "account history has it too"
    snapshot = op1.snapshot()
    for queue in ("pending", "in_process", "on_hold"):
        assert alarm_id not in [r["alarm_id"] for r in queue_rows(snapshot, queue)]
    refused(sup.post(f"/alarms/{alarm_id}/take-over"), 409, "OPS-STATE")


def test_take_next_takes_by_priority_and_answers_null_when_pending_is_empty(hub: Hub) -> None:
    console = hub.console().sign_in("OP2")
    not_receiving(console)
    clear_queues(console, "OP2")
    hub.signal(2, "E130", 12)  # burglary, priority C
    hub.signal(2, "E110", 13)  # fire, priority A: first, though newer
    burglary, fire = hub.alarm_of(2, 12), hub.alarm_of(2, 13)
    assert console.ok("/take-next")["alarm"]["alarm_id"] == fire["alarm_id"]
    assert console.ok("/take-next")["alarm"]["alarm_id"] == burglary["alarm_id"]
    assert console.ok("/take-next")["alarm"] is None


def test_receiving_hands_out_the_next_alarm_and_signs_on_again(hub: Hub) -> None:
    console = hub.console().sign_in("OP4")
    not_receiving(console)
    clear_queues(console, "OP4")
    hub.signal(3, "E130", 14)
    alarm_id = hub.alarm_of(3, 14)["alarm_id"]
    assert hub.alarm(alarm_id)["state"] == "pending", "not receiving: nothing handed out"
    data = console.ok("/receiving", {"receiving": True})
    assert data["operator"]["receiving"] is True
    handed = wait_for(
        lambda: (row := hub.alarm(alarm_id))["opr"] == "OP4" and row, "alarm handed to OP4"
    )
    assert handed["state"] == "in_process"
    assert "HAND" in hub.actions_on(alarm_id)
    statuses = {o["code"]: o for o in console.snapshot()["operators"]}
    assert statuses["OP4"]["status"] == "Receiving Signals"
    assert statuses["OP4"]["in_process"] >= 1
    # signed off elsewhere (here: directly), the toggle signs on again
    with write_transaction(hub.engine) as conn:
        lock_incidents(conn)
        handling.sign_off(conn, "OP4", now_us())
    refused(console.post("/take-next"), 403, "OPS-SIGNON")
    data = console.ok("/receiving", {"receiving": False})
    assert data["operator"] == {**data["operator"], "signed_on": True, "receiving": False}


def test_a_held_alarm_returns_to_pending_marked_been_on_hold(hub: Hub) -> None:
    console = hub.console().sign_in("OP1")
    not_receiving(console)
    hub.signal(4, "E130", 15)
    alarm_id = hub.alarm_of(4, 15)["alarm_id"]
    console.ok(f"/alarms/{alarm_id}/take")
    console.ok(f"/alarms/{alarm_id}/hold", {"minutes": 1, "reason": "waiting for police"})
    with write_transaction(hub.engine) as conn:  # the minute is up
        conn.execute(
            update(s.alarm).where(s.alarm.c.alarm_id == alarm_id).values(hold_until_us=now_us())
        )

    def back() -> Row | None:
        rows = queue_rows(console.snapshot(), "pending")
        return next((r for r in rows if r["alarm_id"] == alarm_id), None)

    row = wait_for(back, "the held alarm back in pending")
    assert row["been_on_hold"] is True
    assert row["opr"] is None
    assert hub.actions_on(alarm_id)[-1] == "UNHLD"
    console.ok(f"/alarms/{alarm_id}/take")
    console.ok(f"/alarms/{alarm_id}/resolve", {"resolution": "NOCON"})


@pytest.mark.backends("postgresql")  # row locks are PostgreSQL's; SQLite locks the file
def test_an_operator_action_waits_for_a_routing_turn_instead_of_deadlocking(hub: Hub) -> None:
    """A routing turn holds the incident counter and then locks the idle operators to hand
    out alarms. An operator's action that locked its own row first and then wanted the counter
    deadlocked with it; PostgreSQL then failed one of the two (a 503 on the console)."""
    console = hub.console().sign_in("OP3")
    answers: list[httpx.Response] = []
    with hub.engine.connect() as routing:  # what the writer's routing turn does, held open
        with routing.begin(), hub.engine.connect() as watch:
            lock_incidents(routing)
            waiting = watch.execute(_WAITING_FOR_A_LOCK).scalar_one()  # the writer's, if any
            action = threading.Thread(
                target=lambda: answers.append(console.post("/receiving", {"receiving": False}))
            )
            action.start()
            wait_for(
                lambda: watch.execute(_WAITING_FOR_A_LOCK).scalar_one() > waiting,
                "the console's transaction waiting for a lock",
            )
            routing.exec_driver_sql("SET LOCAL lock_timeout = '10s'")
            routing.execute(
                select(s.operator.c.code).where(s.operator.c.code == "OP3").with_for_update()
            ).first()
        action.join(30)
    assert len(answers) == 1 and answers[0].status_code == 200, answers and answers[0].text
    assert answers[0].json()["operator"]["receiving"] is False


_WAITING_FOR_A_LOCK = text(
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


# bad input ----------------------------------------------------------------------------------


def test_bad_input_is_refused_with_422_and_changes_nothing(hub: Hub) -> None:
    console = hub.console().sign_in("OP2")
    not_receiving(console)
    hub.signal(5, "E130", 16)
    alarm_id = hub.alarm_of(5, 16)["alarm_id"]
    console.ok(f"/alarms/{alarm_id}/take")
    before = hub.actions_on(alarm_id), hub.alarm(alarm_id), hub.operator("OP2")
    a = f"/alarms/{alarm_id}"
    cases: list[tuple[str, object, bytes | None, str]] = [
        (f"{a}/call", None, b"not json", "not valid JSON"),
        (f"{a}/call", None, b"[1, 2]", "must be a JSON object"),
        (f"{a}/call", None, b'"text"', "must be a JSON object"),
        (f"{a}/call", {}, None, "missing field 'text'"),
        (f"{a}/call", {"text": 5}, None, "field 'text' must be a string"),
        (f"{a}/call", {"text": "x", "extra": 1}, None, "unknown field 'extra'"),
        (f"{a}/note", {"text": None}, None, "field 'text' must be a string"),
        (f"{a}/hold", {"minutes": "5", "reason": "x"}, None, "'minutes' must be a whole number"),
        (f"{a}/hold", {"minutes": True, "reason": "x"}, None, "'minutes' must be a whole number"),
        (f"{a}/hold", {"minutes": 1.5, "reason": "x"}, None, "'minutes' must be a whole number"),
        (f"{a}/hold", {"minutes": 5}, None, "missing field 'reason'"),
        (f"{a}/resolve", {"resolution": ["FA"]}, None, "'resolution' must be a string"),
        (f"{a}/resolve", {"note": "x"}, None, "missing field 'resolution'"),
        ("/receiving", {"receiving": "no"}, None, "'receiving' must be true or false"),
        ("/receiving", {"receiving": 0}, None, "'receiving' must be true or false"),
        ("/take-next", {"alarm": 1}, None, "unknown field 'alarm'"),
        ("/alarms/abc/take", {}, None, "alarm id must be a positive whole number"),
        ("/alarms/-1/take", {}, None, "alarm id must be a positive whole number"),
        ("/alarms/0/take", {}, None, "alarm id must be a positive whole number"),
        ("/alarms/99999999999999999999/take", {}, None, "alarm id must be a positive whole"),
        (f"{a}/note", None, b'{"text": "' + b"x" * 20_000 + b'"}', "larger than"),
    ]
    for path, body, raw, message in cases:
        answer = console.post(path, body, raw=raw)
        assert message in refused(answer, 422, "CONSOLE-INPUT"), (path, body, raw)
    refused(console.get("/alarms/abc"), 422, "CONSOLE-INPUT")
    after = hub.actions_on(alarm_id), hub.alarm(alarm_id), hub.operator("OP2")
    assert after == before, "bad input changed nothing"
    console.ok(f"/alarms/{alarm_id}/resolve", {"resolution": "FA"})


def test_unknown_paths_and_methods_answer_the_error_envelope(hub: Hub) -> None:
    console = hub.console().sign_in("OP2")
    assert console.get("/nothing-here").status_code == 404
    assert console.client.get("/console/api/take-next").status_code == 405
    assert console.client.delete("/console/api/alarms/1").status_code == 405


# reads --------------------------------------------------------------------------------------


def test_resolutions_operators_stats_and_me(hub: Hub) -> None:
    hub.signal(29, "E602", 1)  # stored when answered: the minute counts have it
    console = hub.console().sign_in("SUP")
    me = console.get("/me").json()
    assert me["operator"] == {
        "code": "SUP",
        "name": "Sam Supervisor",
        "role": "supervisor",
        "signed_on": True,
        "receiving": me["operator"]["receiving"],
    }
    assert abs(me["server_us"] - now_us()) < 60_000_000
    with hub.engine.connect() as conn:
        codes = resolutions.resolution_codes(conn)
    answer = console.get("/resolutions").json()["resolutions"]
    assert {r["code"]: r["text"] for r in answer} == codes
    operators = {o["code"]: o for o in console.get("/operators").json()["operators"]}
    assert set(operators) == set(OPERATORS)
    assert operators["DIS"]["disabled"] is True
    assert all("password_hash" not in o for o in operators.values())
    stats = console.get("/stats").json()
    assert stats["minutes"] == len(stats["signals_per_minute"]) == 60
    assert sum(stats["signals_per_minute"]) >= 1, "this test posted a signal"


def test_static_files_are_served_with_the_security_headers(hub: Hub) -> None:
    for name, kind in (("console.js", "javascript"), ("console.css", "text/css")):
        answer = httpx.get(f"{hub.url}/console/static/{name}", timeout=30)
        assert answer.status_code == 200
        assert kind in answer.headers["content-type"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-cache"
    assert httpx.get(f"{hub.url}/console/static/../app.py", timeout=30).status_code == 404


# the live feed ------------------------------------------------------------------------------


def test_the_event_stream_pushes_a_snapshot_when_a_signal_arrives(hub: Hub) -> None:
    console = hub.console().sign_in("OP1")
    not_receiving(console)
    with console.client.stream("GET", "/console/events", timeout=30) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["cache-control"] == "no-store"
        events = read_events(stream.iter_lines())
        name, data = next(events)
        assert name == "snapshot"
        first = orjson.loads(data)
        assert {"pending", "in_process", "on_hold", "operators", "server_us"} <= set(first)
        name, data = next(events)
        assert name == "clock"
        assert abs(orjson.loads(data)["server_us"] - now_us()) < 60_000_000

        hub.signal(6, "E120", 17)
        seen = None
        for name, data in events:  # the stream's own read timeout bounds the wait
            if name != "snapshot":
                continue
            rows = queue_rows(orjson.loads(data), "pending")
            seen = next((r for r in rows if r["account_number"] == "700006"), None)
            if seen is not None:
                break
        assert seen is not None
        assert (seen["type"], seen["zone"], seen["state"]) == ("PANIC", "017", "pending")
        assert orjson.loads(data)["revision"] > first["revision"]


def test_the_event_stream_ends_with_signed_out_when_the_session_ends(hub: Hub) -> None:
    """The stream checks its session every 5 s: a session ended meanwhile gets ``signed-out``
    and the stream ends."""
    console = hub.console().sign_in("OP2")
    with console.client.stream("GET", "/console/events", timeout=60) as stream:
        events = read_events(stream.iter_lines())
        assert next(events)[0] == "snapshot"
        answer = console.client.post("/console/logout", headers={"X-CSRF-Token": console.csrf})
        assert answer.status_code == 200, answer.text
        names = [name for name, _ in events]  # to the end of the stream
    assert names[-1] == "signed-out", names
