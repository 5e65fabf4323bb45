"""Hostile input against the monitoring query interface (issue 15, items 6 and 7; decisions §6
"Query interface body"): limits before authentication, replays refused before the query runs,
unknown usernames that cost no database round trip each, nonces on a shared PostgreSQL
database, the XMHIST cap and an API user whose password cannot be decrypted.

Each test here failed on the code before this work; see each docstring for what was wrong.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import event, insert, select, update
from sqlalchemy.engine import Engine

from alarmhub import secret_key
from alarmhub.clock import now_us
from alarmhub.store import provisioning
from alarmhub.store import schema as s
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.xm import digest, errors
from alarmhub.xm.auth import NONCE_WINDOW_US, NonceBook, QueryAuth, Refused
from tests.support.database import UNROUTED, database_url, db_rows, drop_database, new_database
from tests.support.processes import Runner, Server, Station, cli, provision, start_all, wait_for
from tests.support.xm_signing import PARAMS, PATH, hmac_headers, new_nonce, sha1_headers

# the database matters to these attacks: they run on SQLite and on PostgreSQL
pytestmark = pytest.mark.backends("sqlite", "postgresql")

USER, PASSWORD = "reports", "reports-password"
HMAC_USER, HMAC_PASSWORD = "signer", "signer-password"
BROKEN = "broken"  # its password is encrypted with another station's key
ACCOUNT = "700042"
XMHIST_CAP = 3
SIGNALS = 5
MIB = 1024 * 1024
DEADLINE_S = 15.0


@dataclass
class Hub:
    station: Station

    @property
    def server(self) -> Server:
        return self.station.server

    @property
    def url(self) -> str:
        return f"{self.server.url}{PATH}"

    def send(self, form: dict[str, str], headers: dict[str, str]) -> httpx.Response:
        parts = {name: (None, value) for name, value in form.items()}
        return httpx.post(self.url, params=PARAMS, files=parts, headers=headers, timeout=30)

    def ask(self, method: str, **fields: str) -> httpx.Response:
        form = {"*setMethod": method, **fields}
        return self.send(form, sha1_headers(USER, PASSWORD))

    def metric(self, name: str, labels: str) -> float:
        text = httpx.get(f"{self.server.url}/metrics", timeout=10).text
        found = re.search(rf"^{name}_total\{{{labels}\}} (\S+)$", text, re.M)
        return float(found.group(1)) if found else 0.0

    def rss_kib(self) -> int:
        return self.server.rss_kib()


def break_password(data_dir: Path, username: str) -> None:
    """Re-encrypt ``username``'s password with a key that is not the station's."""
    other = Fernet(Fernet.generate_key())
    engine = open_engine(database_url(data_dir))
    try:
        with write_transaction(engine) as conn:
            moved = conn.execute(
                update(s.api_user)
                .where(s.api_user.c.username == username)
                .values(password_encrypted=secret_key.encrypt(other, "whatever-password"))
            ).rowcount
            assert moved == 1
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir = tmp_path_factory.mktemp("attack-query")
    token = provision(data_dir)
    cli(data_dir, "dnis", "add", "C1", "--mask", "70####")
    cli(data_dir, "account", "add", ACCOUNT, "--name", "Subscriber 42")
    cli(data_dir, "apiuser", "add", USER, "--password", PASSWORD)
    cli(data_dir, "apiuser", "add", HMAC_USER, "--password", HMAC_PASSWORD, "--hmac-only")
    env = {"ALARMHUB_XMHIST_MAX_RECORDS": str(XMHIST_CAP), "ALARMHUB_TIMEZONE": "UTC"}
    server = Server(data_dir, env=env).start()
    station = Station(server, token, data_dir)
    try:
        for zone in range(1, SIGNALS + 1):
            body = {"dnis": "C1", "panel": "42", "code": "E401", "zone_or_user": str(zone)}
            answer = station.post(body)
            assert answer.status_code == 200, answer.text
        wait_for(
            lambda: db_rows(data_dir, UNROUTED)[0][0] == 0,
            "every signal routed",
            DEADLINE_S,
        )
        yield Hub(station)
    finally:
        server.stop()


# the body: 413 before any parsing ------------------------------------------------------------


def big_form(size: int = MIB) -> dict[str, str]:
    return {"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY", "PADDING": "x" * size}


WARM_UP = 8  # requests, each on a connection of its own: every worker of a node takes some


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_1_mib_unauthenticated_form_is_413_and_memory_stays_flat(hub: Hub) -> None:
    """Before: the whole form (up to 64 MiB) was parsed before the digest was looked at, and
    the answer was 401 after the work was done."""
    for _ in range(WARM_UP):  # buffers and code paths of every worker (the kernel spreads
        # the connections over them; a worker's first large body moves its allocator's limits)
        assert hub.send(big_form(), {}).status_code == 413
    before = hub.rss_kib()
    for _ in range(5):
        answer = hub.send(big_form(), {"X-SVC-USERNAME": "nobody"})
        assert answer.status_code == 413, answer.text
        assert answer.json() == errors.TOO_LARGE
        assert answer.json() == {"status": "error", "message": "request too large", "errno": 413}
    after = hub.rss_kib()
    assert after - before < 8 * 1024, f"RSS grew from {before} KiB to {after} KiB"
    assert hub.ask("XMAPEND", SOURCE="DATAENTRY").status_code == 200, "the node still answers"


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_a_chunked_body_over_the_limit_is_413_without_reading_it_all(hub: Hub) -> None:
    """No Content-Length: the bytes are counted as they come (the 401 cases never read it)."""

    def chunks() -> Iterator[bytes]:
        yield b'--b\r\nContent-Disposition: form-data; name="*setMethod"\r\n\r\nXMAPEND\r\n'
        for _ in range(64):
            yield b"x" * 16384  # 1 MiB in all, never complete

    headers = sha1_headers(USER, PASSWORD)
    headers["Content-Type"] = "multipart/form-data; boundary=b"
    answer = httpx.post(hub.url, params=PARAMS, content=chunks(), headers=headers, timeout=30)
    assert answer.status_code == 413, answer.text
    assert answer.json() == errors.TOO_LARGE
    unsigned = {"Content-Type": "multipart/form-data; boundary=b"}
    answer = httpx.post(hub.url, params=PARAMS, content=chunks(), headers=unsigned, timeout=30)
    assert answer.status_code == 401, "the headers are checked before the body is read"


@pytest.mark.backends("sqlite")  # the database plays no part in it
def test_an_hmac_request_over_the_limit_is_413(hub: Hub) -> None:
    """hmac-sha256 signs the form, so its body is read (bounded) before the digest is checked."""
    form = big_form(70_000)
    headers = hmac_headers(form, HMAC_USER, HMAC_PASSWORD)
    answer = hub.send(form, headers)
    assert answer.status_code == 413, answer.text
    small = {"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY"}
    ok = hub.send(small, hmac_headers(small, HMAC_USER, HMAC_PASSWORD))
    assert ok.status_code == 200, ok.text


# replays -------------------------------------------------------------------------------------


def test_a_replayed_nonce_is_refused_before_the_query_runs(hub: Hub) -> None:
    """Before: the query ran beside the nonce's claim, and only its answer was withheld."""
    form = {"*setMethod": "XMAINPRO"}
    headers = sha1_headers(USER, PASSWORD)
    ran = hub.metric("alarmhub_queries", 'method="XMAINPRO"')
    assert hub.send(form, headers).status_code == 200
    assert hub.metric("alarmhub_queries", 'method="XMAINPRO"') == ran + 1
    refused = hub.metric("alarmhub_queries_refused", 'status="401"')
    answer = hub.send(form, headers)
    assert answer.status_code == 401
    assert answer.json() == errors.AUTHENTICATION_FAILED
    assert hub.metric("alarmhub_queries", 'method="XMAINPRO"') == ran + 1, "the query ran"
    assert hub.metric("alarmhub_queries_refused", 'status="401"') == refused + 1


# XMHIST without LIMITHIST --------------------------------------------------------------------


def test_xmhist_without_limithist_returns_at_most_the_cap_newest_first(hub: Hub) -> None:
    """Before: every event of the window, however many."""
    answer = hub.ask("XMHIST", ACCOUNT=ACCOUNT, HOURS="24")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["TOTAL_RECORDS"] == str(XMHIST_CAP)
    zones = [event["ZONE_2"] for event in body["EVENT"]]
    assert zones == ["005", "004", "003"], "the newest events"
    everything = hub.ask("XMHIST", ACCOUNT=ACCOUNT, HOURS="24", LIMITHIST=str(SIGNALS + 10))
    assert everything.json()["TOTAL_RECORDS"] == str(SIGNALS), "LIMITHIST is the caller's cap"


# an API user whose password cannot be decrypted ----------------------------------------------


def test_an_undecryptable_api_user_is_disabled_alone_with_a_log_line(tmp_path: Path) -> None:
    """Before: one row the key could not decrypt made the whole table unusable: every API user
    was refused."""
    cli(tmp_path, "apiuser", "add", USER, "--password", PASSWORD)
    cli(tmp_path, "apiuser", "add", BROKEN, "--password", "broken-password")
    break_password(tmp_path, BROKEN)
    server = Server(tmp_path).start()
    try:
        hub = Hub(Station(server, "", tmp_path))
        assert hub.ask("XMAPEND", SOURCE="DATAENTRY").status_code == 200
        broken = sha1_headers(username=BROKEN, password="broken-password")
        answer = hub.send({"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY"}, broken)
        assert answer.status_code == 401
        lines = [line for line in server.log().splitlines() if "cannot be decrypted" in line]
        assert lines, server.log()
        assert all(f"username={BROKEN}" in line for line in lines), lines
        assert not any(f"username={USER}" in line for line in lines)
    finally:
        server.stop()


# unknown usernames ---------------------------------------------------------------------------


def signed(username: str, password: str) -> dict[str, str]:
    date, nonce = digest.date_header(), new_nonce()
    return {
        "x-svc-appkey": "t",
        "x-svc-username": username,
        "x-svc-date": date,
        "x-svc-nonce": nonce,
        "x-svc-digest": digest.sha1_digest("t", username, date, nonce, password),
    }


def test_unknown_usernames_do_not_cost_a_database_round_trip_each(engine: Engine) -> None:
    """Before: every request naming an unknown user read the database again (a flood of
    random usernames was a flood of queries)."""
    key = Fernet(Fernet.generate_key())
    statements = 0

    def count(*_: object) -> None:
        nonlocal statements
        statements += 1

    async def scenario() -> None:
        auth = QueryAuth(engine, key, NonceBook(Runner(engine)))  # type: ignore[arg-type]
        await auth.start()
        try:
            event.listen(engine, "before_cursor_execute", count)
            answers: list[object] = []
            for wave in range(3):  # a flood of random names, 300 at a time
                names = [f"intruder{wave}x{n}" for n in range(300)]
                answers += await asyncio.gather(*(auth.verify(signed(n, "pw"), []) for n in names))
            repeated = [auth.verify(signed("intruder0x1", "pw"), []) for _ in range(300)]
            answers += await asyncio.gather(*repeated)  # a name refused a moment ago
            event.remove(engine, "before_cursor_execute", count)
            assert all(isinstance(a, Refused) for a in answers)
            assert statements < 30, f"{statements} statements for 1,200 unknown usernames"
            # a user added now is known at once (the next check starts after the request)
            provisioning.add_api_user(engine, key, "newcomer", "newcomer-password", False)
            user = await auth.verify(signed("newcomer", "newcomer-password"), [])
            assert not isinstance(user, Refused), user
            # one refused a moment ago is known within a second of being added
            provisioning.add_api_user(engine, key, "intruder0x7", "intruder-password", False)

            async def known() -> bool:
                found = await auth.verify(signed("intruder0x7", "intruder-password"), [])
                return not isinstance(found, Refused)

            for _ in range(40):
                if await known():
                    break
                await asyncio.sleep(0.05)
            assert await known(), "never known"
        finally:
            await auth.stop()

    asyncio.run(scenario())


# nonces on a shared database -----------------------------------------------------------------


def test_the_shared_nonce_table_is_purged(engine: Engine) -> None:
    """Before: with a shared database (PostgreSQL) old nonces were never deleted."""

    async def scenario() -> None:
        old = now_us() - NONCE_WINDOW_US - 1
        with write_transaction(engine) as conn:
            conn.execute(insert(s.nonce).values(username="ann", nonce="old", created_us=old))
        book = NonceBook(Runner(engine), shared=True)  # type: ignore[arg-type]
        book.PURGE_SECONDS = 0.05  # type: ignore[misc]
        await book.start()
        try:
            assert await book.claim("ann", "new", now_us())
            for _ in range(200):
                with engine.connect() as conn:
                    left = set(conn.execute(select(s.nonce.c.nonce)).scalars())
                if left == {"new"}:
                    break
                await asyncio.sleep(0.05)
            assert left == {"new"}
        finally:
            await book.stop()

    asyncio.run(scenario())


@pytest.fixture
def shared_database() -> Iterator[str]:
    url = new_database()
    try:
        yield url
    finally:
        drop_database(url)


@pytest.mark.backends("postgresql")  # several nodes need PostgreSQL
def test_two_nodes_claiming_nonces_at_once_never_answer_500(
    tmp_path: Path, shared_database: str
) -> None:
    """Before: two nodes inserting the same nonce at once raised a unique violation that failed
    the whole batch of claims of that loop turn: every query in it answered 500."""
    env = {"ALARMHUB_DATABASE_URL": shared_database}
    cli(tmp_path, "apiuser", "add", USER, "--password", PASSWORD, env=env)
    nodes = start_all(Server(tmp_path, env=env) for _ in range(2))
    statuses: list[int] = []
    lock = threading.Lock()

    def send(node: Server, headers: dict[str, str], client: httpx.Client) -> None:
        form = {"*setMethod": "XMAINPRO"}
        parts = {name: (None, value) for name, value in form.items()}
        answer = client.post(
            f"{node.url}{PATH}", params=PARAMS, files=parts, headers=headers, timeout=30
        )
        with lock:
            statuses.append(answer.status_code)

    try:
        # the same nonce to both nodes at once, 40 times: one 200 and one 401 each time
        with httpx.Client() as client:
            for _ in range(40):
                headers = sha1_headers(USER, PASSWORD)
                start = threading.Barrier(2)
                pair_before = len(statuses)

                def racer(
                    node: Server,
                    h: dict[str, str] = headers,
                    barrier: threading.Barrier = start,
                ) -> None:
                    barrier.wait()
                    send(node, h, client)

                threads = [threading.Thread(target=racer, args=(n,)) for n in nodes]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(timeout=60)
                assert sorted(statuses[pair_before:]) == [200, 401], statuses[pair_before:]
        # different nonces, many at once on both nodes: every one answered 200
        statuses.clear()

        def burst(n: int) -> None:
            with httpx.Client() as own:
                for i in range(15):
                    node = nodes[(n + i) % 2]
                    send(node, sha1_headers(USER, PASSWORD), own)

        threads = [threading.Thread(target=burst, args=(n,)) for n in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert statuses == [200] * (12 * 15), sorted(set(statuses))
    finally:
        for node in nodes:
            node.stop()


def test_many_nonce_claims_in_one_batch_count_each_once(engine: Engine) -> None:
    """Claims of one batch: a nonce twice in it is one claim and one replay."""

    async def scenario() -> None:
        book = NonceBook(Runner(engine), shared=True)  # type: ignore[arg-type]
        await book.start()
        try:
            now = now_us()
            nonces = [secrets.token_hex(10) for _ in range(50)]
            claims = [book.claim("ann", n, now) for n in nonces + nonces[:10]]
            results = await asyncio.gather(*claims)
            assert sum(results) == 50
        finally:
            await book.stop()

    asyncio.run(scenario())
