"""Attacks on the console's sign-in and sessions, through a real server (decisions section 6,
"Console sign-in"): a burst of wrong sign-ins from one address, throttling per (address, code),
one answer for every refused password, proxies, and sessions that end when they must.

The node believes ``X-Forwarded-For`` from its trusted proxies (here 127.0.0.1 and 127.0.0.3),
so each test plays clients of its own addresses through that header; clients bound to
127.0.0.2 and 127.0.0.3 play an untrusted peer and a second proxy.
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import insert, select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core.tokens import token_hash
from alarmhub.store import engine as store_engine
from alarmhub.store import operator_access, operators
from alarmhub.store import schema as s
from tests.support.database import database_url
from tests.support.processes import Server, cli, wait_for

# the database matters to these attacks: they run on SQLite and on PostgreSQL
# long: the module takes minutes in all under load, so it starts among the first
pytestmark = [pytest.mark.backends("sqlite", "postgresql"), pytest.mark.long]

PASSWORD = "correct-horse-battery"
OPERATORS = ["OP1", "OP2", "OP3", "OP4", "OP5", "OP6", "OP7", "PWD", "OFF", "EXP", "DIS"]


@dataclass
class Node:
    server: Server
    engine: Engine
    data_dir: Path

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="module")
def node(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    data_dir = tmp_path_factory.mktemp("console-attack")
    engine = store_engine.open_engine(database_url(data_dir))
    store_engine.upgrade(engine)
    for code in OPERATORS:
        operators.add_operator(engine, code, f"Operator {code}", "operator", PASSWORD)
    operator_access.set_disabled(engine, "DIS", True, now_us())
    server = Server(data_dir, env={"ALARMHUB_TRUSTED_PROXIES": "127.0.0.1,127.0.0.3"}).start()
    try:
        yield Node(server, engine, data_dir)
    finally:
        engine.dispose()
        assert server.stop() == 0, server.log()
        assert PASSWORD not in server.log(), "a password reached the log"


class Browser:
    """One browser: its cookies, the sign-in form's token, and the address it claims."""

    def __init__(self, url: str, address: str = "", bind: str = "") -> None:
        transport = httpx.HTTPTransport(local_address=bind) if bind else None
        self.client = httpx.Client(
            base_url=url, timeout=60, follow_redirects=False, transport=transport
        )
        self.address = address
        self.token = ""

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        self.client.close()

    def form(self) -> Browser:
        page = self.client.get("/console/login")
        assert page.status_code == 200, page.text
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found, page.text
        self.token = html.unescape(found.group(1))
        return self

    def sign_in(self, code: str, password: str = PASSWORD, address: str = "") -> httpx.Response:
        if not self.token:
            self.form()
        claimed = address or self.address
        headers = {"X-Forwarded-For": claimed} if claimed else {}
        form = {"csrf": self.token, "code": code, "password": password}
        answer = self.client.post("/console/login", data=form, headers=headers)
        found = re.search(r'name="csrf" value="([^"]+)"', answer.text)
        if found:  # the form again, perhaps with a new token (and its cookie)
            self.token = html.unescape(found.group(1))
        return answer

    def me(self) -> int:
        return self.client.get("/console/api/me").status_code


def signed_in(answer: httpx.Response) -> bool:
    return answer.status_code == 303 and answer.headers.get("location") == "/console"


def message(answer: httpx.Response) -> str:
    """The message the sign-in form shows, digits (of a countdown) replaced by ``#``."""
    found = re.search(r'<p id="login-message"[^>]*>(.*?)</p>', answer.text, re.S)
    assert found, answer.text
    return re.sub(r"[0-9]+", "#", html.unescape(found.group(1)))


# the burst ----------------------------------------------------------------------------------


def test_thirty_wrong_sign_ins_from_one_address_leave_another_address_signing_in(
    node: Node,
) -> None:
    """Today 30 parallel wrong sign-ins from one address fill the node's single sign-in
    queue, and an operator elsewhere gets "the node is busy" (429) for the next 10 s."""
    browsers = [Browser(node.url, "10.1.0.1").form() for _ in range(30)]
    answers: list[httpx.Response] = []
    start = threading.Barrier(len(browsers))

    def attack(browser: Browser, n: int) -> None:
        start.wait()
        answers.append(browser.sign_in(f"Z{n:02d}", "not-the-password"))

    threads = [threading.Thread(target=attack, args=(b, n)) for n, b in enumerate(browsers)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: len(answers) >= 1, "a first answer to the burst", seconds=60)
        with Browser(node.url, "10.1.0.2") as operator:
            answer = operator.sign_in("OP1")
            assert signed_in(answer), (answer.status_code, answer.text)
            assert operator.me() == 200
    finally:
        for thread in threads:
            thread.join(60)
        for browser in browsers:
            browser.client.close()
    assert len(answers) == 30
    assert {a.status_code for a in answers} <= {401, 429}, [a.status_code for a in answers]


# throttling per (address, code) -------------------------------------------------------------


def test_the_sixth_failure_of_a_pair_gets_429_with_the_same_text_for_an_unknown_code(
    node: Node,
) -> None:
    texts = []
    for code, address in (("OP2", "10.2.0.1"), ("ZZ9", "10.2.0.2")):
        with Browser(node.url, address) as browser:
            for _ in range(5):
                assert browser.sign_in(code, "not-the-password").status_code == 401
            sixth = browser.sign_in(code)  # the right password for OP2: not even checked
            assert sixth.status_code == 429, sixth.text
            assert "alarmhub_session" not in sixth.headers.get("set-cookie", "")
            assert int(sixth.headers["retry-after"]) > 0
            texts.append(message(sixth))
    assert texts[0] == texts[1], "a real code and an unknown one are throttled alike"
    assert "wait" in texts[0]


def test_other_codes_from_the_address_and_the_code_from_elsewhere_still_sign_in(
    node: Node,
) -> None:
    with Browser(node.url, "10.3.0.1") as attacker:
        for _ in range(5):
            assert attacker.sign_in("OP3", "not-the-password").status_code == 401
        assert attacker.sign_in("OP3").status_code == 429
        assert attacker.sign_in("OP3", "not-the-password").status_code == 429
    with Browser(node.url, "10.3.0.1") as colleague:  # the same station, another operator
        assert signed_in(colleague.sign_in("OP4"))
    with Browser(node.url, "10.3.0.2") as owner:  # the operator, at another address
        assert signed_in(owner.sign_in("OP3"))


def test_an_untrusted_peer_is_counted_by_its_own_address_whatever_it_forwards(
    node: Node,
) -> None:
    """A peer that is not a trusted proxy cannot dodge the throttle with X-Forwarded-For; a
    trusted one (here 127.0.0.3, from the ``trusted_proxies`` setting) names its clients."""
    with Browser(node.url, bind="127.0.0.2") as peer:
        for n in range(5):
            answer = peer.sign_in("OP6", "not-the-password", address=f"10.6.0.{n}")
            assert answer.status_code == 401
        assert peer.sign_in("OP6", address="10.6.0.99").status_code == 429
    with Browser(node.url, bind="127.0.0.3") as proxy:
        for _ in range(5):
            answer = proxy.sign_in("OP7", "not-the-password", address="10.7.0.1")
            assert answer.status_code == 401
        assert proxy.sign_in("OP7", address="10.7.0.1").status_code == 429
        assert signed_in(proxy.sign_in("OP7", address="10.7.0.2"))


# one answer for every refused password -----------------------------------------------------


def test_unknown_code_wrong_password_and_disabled_operator_get_byte_identical_401s(
    node: Node,
) -> None:
    with Browser(node.url).form() as browser:
        answers = [
            browser.sign_in("ZZ8", PASSWORD, address="10.4.0.1"),  # no such operator
            browser.sign_in("OP5", "not-the-password", address="10.4.0.2"),
            browser.sign_in("DIS", PASSWORD, address="10.4.0.3"),  # disabled, right password
        ]
    for answer in answers:
        assert answer.status_code == 401, answer.text
    shapes = [
        (a.status_code, a.content, sorted((k, v) for k, v in a.headers.items() if k != "date"))
        for a in answers
    ]
    assert shapes[0] == shapes[1] == shapes[2]


# sessions -----------------------------------------------------------------------------------


def test_a_password_change_ends_the_operators_sessions(node: Node) -> None:
    with Browser(node.url, "10.8.0.1") as browser:
        assert signed_in(browser.sign_in("PWD"))
        assert browser.me() == 200
        new = "another-good-password"
        cli(node.data_dir, "operator", "password", "PWD", env={"ALARMHUB_OPERATOR_PASSWORD": new})
        assert browser.me() == 401, "the old cookie is no session any more"
        page = browser.client.get("/console")
        assert (page.status_code, page.headers["location"]) == (303, "/console/login")
    with node.engine.connect() as conn:
        sessions = conn.execute(
            select(s.console_session).where(s.console_session.c.operator == "PWD")
        ).all()
        signed_on = conn.execute(
            select(s.operator.c.signed_on_us).where(s.operator.c.code == "PWD")
        ).scalar_one()
    assert sessions == []
    assert signed_on is None, "signed off: no alarm is handed to a console that is gone"
    with Browser(node.url, "10.8.0.2") as browser:
        assert signed_in(browser.sign_in("PWD", new))


def test_operator_disable_ends_the_operators_sessions(node: Node) -> None:
    with Browser(node.url, "10.9.0.1") as browser:
        assert signed_in(browser.sign_in("OFF"))
        assert browser.me() == 200
        cli(node.data_dir, "operator", "disable", "OFF")
        assert browser.me() == 401
    with node.engine.connect() as conn:
        left = conn.execute(
            select(s.console_session).where(s.console_session.c.operator == "OFF")
        ).all()
    assert left == []


def test_expired_sessions_are_purged(node: Node) -> None:
    expired = "x" * 64  # the hash column of a session that ended long ago
    with node.engine.begin() as conn:
        conn.execute(
            insert(s.console_session).values(
                token_hash=expired, operator="EXP", created_us=1, expires_us=2
            )
        )
    with Browser(node.url, "10.10.0.1") as browser:
        assert signed_in(browser.sign_in("OP1"))
    with node.engine.connect() as conn:
        hashes = conn.execute(select(s.console_session.c.token_hash)).scalars().all()
    assert expired not in hashes


def test_an_unknown_session_cookie_is_not_looked_up_again(node: Node) -> None:
    """A cookie found to be no session is remembered (a minute): repeating it costs no
    database read. Shown by making it a session after the first look: still refused."""
    token = "A" * 43
    with Browser(node.url) as browser:
        browser.client.cookies.set("alarmhub_session", token, path="/console")
        assert browser.me() == 401
        with node.engine.begin() as conn:
            conn.execute(
                insert(s.console_session).values(
                    token_hash=token_hash(token),
                    operator="OP1",
                    created_us=now_us(),
                    expires_us=now_us() + 3600 * 1_000_000,
                )
            )
        assert browser.me() == 401
        for _ in range(20):
            assert browser.me() == 401
        browser.client.cookies.set("alarmhub_session", "not a token", path="/console")
        assert browser.me() == 401


@pytest.mark.backends("sqlite")  # the database plays no part in it
@pytest.mark.parametrize("segment", ["1" * 5000, "9" * 20, "0", "-1", "\u0661"])
def test_an_alarm_id_out_of_range_is_422_not_a_server_error(node: Node, segment: str) -> None:
    """A path's alarm id is checked before it is a number: 5,000 digits (past int()'s limit)
    or 20 digits are a 422 CONSOLE-INPUT, like any other bad id."""
    with Browser(node.url) as browser:
        assert signed_in(browser.sign_in("OP6"))
        answer = browser.client.get(f"/console/api/alarms/{segment}")
        assert answer.status_code == 422, answer.text
        assert answer.json()["error_code"] == "CONSOLE-INPUT"


# bodies: counted as they arrive -------------------------------------------------------------

MIB = 1024 * 1024


def chunked(first: bytes, mib: int) -> Iterator[bytes]:
    """A body sent in chunks (no Content-Length): ``first``, then ``mib`` MiB of filler."""
    yield first
    for _ in range(mib * 16):
        yield b"x" * (MIB // 16)


def csrf_header(browser: Browser) -> dict[str, str]:
    page = browser.client.get("/console")
    found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert found, page.text
    return {"X-CSRF-Token": html.unescape(found.group(1))}


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_chunked_150_mib_body_is_refused_with_memory_bounded(node: Node) -> None:
    """Before: a chunked body was read whole (the Content-Length check saw none), 150 MiB in
    memory before the 422; the sign-in form was parsed whole the same way. Now the bytes are
    counted as they arrive and the answer comes at the limit."""
    with Browser(node.url, address="10.9.0.1") as browser:
        assert signed_in(browser.sign_in("OP7"))
        action = {**csrf_header(browser), "Content-Type": "application/json"}
        login = {"Content-Type": "application/x-www-form-urlencoded"}
        for _ in range(4):  # every worker's buffers and code paths warmed (small bodies)
            small = browser.client.post("/console/api/receiving", content=chunked(b"{", 1),
                                        headers=action)  # fmt: skip
            assert small.status_code == 422, small.text
        before = node.server.rss_kib()
        answer = browser.client.post(
            "/console/api/receiving", content=chunked(b'{"receiving": "', 150), headers=action
        )
        assert answer.status_code == 422, answer.text
        assert answer.json()["error_code"] == "CONSOLE-INPUT"
        assert "larger than 16384 bytes" in answer.json()["message"]
        grown = node.server.rss_kib() - before
        assert grown < 32 * 1024, f"an action's body: RSS grew by {grown} KiB"
        before = node.server.rss_kib()
        form = browser.client.post(
            "/console/login", content=chunked(b"csrf=x&code=OP1&password=", 150), headers=login
        )
        assert form.status_code == 422, form.text
        grown = node.server.rss_kib() - before
        assert grown < 32 * 1024, f"the sign-in form: RSS grew by {grown} KiB"
        assert "too large" in message(form)
    assert httpx.get(f"{node.url}/healthz", timeout=10).status_code == 200
