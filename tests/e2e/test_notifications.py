"""Notifications delivered end to end (decisions section 13), on both databases: a real node
(``alarmhub serve``, its delivery process) sends the messages its signals queue through a real
SMTP server process (aiosmtpd) and an SMS gateway stand-in (Twilio's form). Each kind reaches
exactly its subscribers; an account on test notifies nobody of its signals; SMTP 4xx is retried
and arrives, 5xx ends failed; HTTP 429/5xx retried, 400 failed; a node SIGKILLed with messages
queued (its gateway down) sends each once after its restart; two nodes on PostgreSQL send each
once; a storm of one account reaches its subscriber as a few messages and digests, every event
accounted for, never more than the rate in any minute: also when the node's writer, which
records what was sent (SQLite), is SIGKILLed while they are sent.

Every check polls with a generous deadline; no test asserts how long anything took. The
station's data (accounts, contacts, gateways) is set up through the command in this process
(``cli``), beside the running node as a user's command would be: what is tested here is the
node's delivery, not the command line's process.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from alarmhub.core import digest
from tests.support.crashing import wait_for_writer
from tests.support.database import database_url
from tests.support.processes import (
    Server,
    Station,
    as_list,
    cli,
    cli_json,
    free_port,
    provision,
    start_all,
    wait_for,
)
from tests.support.sms_gateway import ACCOUNT_SID, AUTH_TOKEN, SmsGateway
from tests.support.smtp_server import SmtpServer

# long: the module takes minutes in all under load, so it starts among the first
pytestmark = [pytest.mark.backends("sqlite", "postgresql"), pytest.mark.long]

DNIS = "N8"
SUCCESS = {"status_code": 200, "status": "success"}
DEADLINE_S = 60.0
SMS_ENV = {"ALARMHUB_SMS_USER": ACCOUNT_SID, "ALARMHUB_SMS_PASSWORD": AUTH_TOKEN}
FROM = "alarms@station.example.com"


def run(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> None:
    cli(data_dir, *args, env=env)


def set_gateways(data_dir: Path, smtp_port: int, sms: SmsGateway | None = None) -> None:
    run(data_dir, "notify", "smtp", "--url", f"smtp://127.0.0.1:{smtp_port}", "--from", FROM)
    if sms is not None:
        run(data_dir, "notify", "sms", "--url", sms.twilio_url, "--from", "+15550000",
            env=SMS_ENV)  # fmt: skip


def account(data_dir: Path, number: str, *contacts: tuple[str, ...]) -> None:
    """An account of the DNIS's range, with contacts: (name, option...)."""
    run(data_dir, "account", "add", number, "--name", f"Account {number}")
    for name, *options in contacts:
        run(data_dir, "contact", "add", number, "--name", name, *options)


def subscriber(name: str, kinds: str, by: str, phone: str = "") -> tuple[str, ...]:
    """A contact (``name``@example.com) subscribed to ``kinds`` by ``by`` (space-separated)."""
    options = ["--email", f"{name.lower()}@example.com"]
    options += ["--phone", f"mobile:{phone}"] if phone else ["--phone", "work:555-0100"]
    options += [a for kind in kinds.split() for a in ("--notify", kind)]
    options += [a for channel in by.split() for a in ("--notify-by", channel)]
    return (name, *options)


def post(station: Station | Any, number: str, code: str, zone: str) -> None:
    body = {"dnis": DNIS, "panel": number[-4:], "code": code, "zone_or_user": zone, "area": "01"}
    answer = station.post(body)
    assert (answer.status_code, answer.json()) == (200, SUCCESS), answer.text


def log(data_dir: Path, number: str) -> list[dict[str, Any]]:
    return as_list(cli_json(data_dir, "notify", "log", "--account", number, "--limit", "1000"))


def settled(data_dir: Path, number: str, count: int) -> list[dict[str, Any]] | None:
    """The account's messages (not digests) once there are ``count`` and none is queued."""
    entire = log(data_dir, number)
    rows = [r for r in entire if r["kind"] != digest.KIND]
    done = len(rows) >= count and all(r["state"] != "queued" for r in entire)
    return rows if done else None


def mail_to(smtp: SmtpServer, address: str) -> list[Any]:
    return [m for m in smtp.arrived() if address in m.rcpt_tos]


# one node for the module's tests that do not interfere (each its own accounts) -----------------


@pytest.fixture(scope="module")
def smtp(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmtpServer]:
    """One server a backend's station (their contacts' addresses are the same)."""
    server = SmtpServer(tmp_path_factory.mktemp("smtp"), free_port()).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sms(backend: str) -> Iterator[SmsGateway]:
    gateway = SmsGateway().start()
    yield gateway
    gateway.stop()


@pytest.fixture(scope="module")
def notifying(station: Station, smtp: SmtpServer, sms: SmsGateway) -> Station:
    run(station.data_dir, "dnis", "add", DNIS, "--mask", "81####")
    set_gateways(station.data_dir, smtp.port, sms)
    return station


def test_each_kind_reaches_exactly_its_subscribers(
    notifying: Station, smtp: SmtpServer, sms: SmsGateway
) -> None:
    data_dir = notifying.data_dir
    account(data_dir, "810001",
            subscriber("Alma", "alarm", "email sms", phone="+15550001"),
            subscriber("Otto", "openclose", "email"),
            subscriber("Tess", "trouble", "email"))  # fmt: skip
    account(data_dir, "810002", subscriber("Nora", "alarm", "email"))
    post(notifying, "810001", "E130", "003")  # a burglary: alarm
    post(notifying, "810001", "E401", "007")  # an opening: openclose
    rows = wait_for(lambda: settled(data_dir, "810001", 3), "the messages sent", DEADLINE_S)
    sent = sorted((r["kind"], r["channel"], r["to"], r["state"]) for r in rows)
    assert sent == [
        ("alarm", "email", "alma@example.com", "sent"),
        ("alarm", "sms", "+15550001", "sent"),
        ("openclose", "email", "otto@example.com", "sent"),
    ]
    (alarm,) = mail_to(smtp, "alma@example.com")
    assert alarm.message["Subject"].startswith("810001 ")
    assert alarm.message["From"] == FROM
    assert [m["to"] for m in sms.sent if m["to"] == "+15550001"] == ["+15550001"]
    assert "810001" in next(m["body"] for m in sms.sent if m["to"] == "+15550001")
    assert len(mail_to(smtp, "otto@example.com")) == 1
    assert mail_to(smtp, "tess@example.com") == []
    assert log(data_dir, "810002") == [] and mail_to(smtp, "nora@example.com") == []


def test_an_account_on_test_notifies_nobody_of_its_signals(
    notifying: Station, smtp: SmtpServer
) -> None:
    data_dir = notifying.data_dir
    account(data_dir, "810003", subscriber("Abe", "alarm openclose", "email"),
            subscriber("Tim", "test", "email"))  # fmt: skip
    run(data_dir, "test", "start", "810003", "--minutes", "30", "--by", "Ann")
    post(notifying, "810003", "E130", "001")
    post(notifying, "810003", "E401", "002")
    wait_for(lambda: len(as_list(cli_json(data_dir, "history", "810003"))) >= 2,
             "the signals in history", DEADLINE_S)  # fmt: skip
    run(data_dir, "test", "stop", "810003")
    # the test's start and end reach its subscriber; queued after the signals, so all is there
    rows = wait_for(lambda: settled(data_dir, "810003", 2), "the test's messages", DEADLINE_S)
    assert sorted((r["kind"], r["to"], r["state"]) for r in rows) == [
        ("test", "tim@example.com", "sent"), ("test", "tim@example.com", "sent"),
    ]  # fmt: skip
    assert len(mail_to(smtp, "tim@example.com")) == 2
    assert mail_to(smtp, "abe@example.com") == []


def test_smtp_4xx_is_retried_and_arrives_5xx_ends_failed(
    notifying: Station, smtp: SmtpServer
) -> None:
    data_dir = notifying.data_dir
    account(data_dir, "810004", subscriber("Rita", "alarm", "email"))
    smtp.answer("data", "451 4.3.0 try again later")
    try:
        post(notifying, "810004", "E130", "001")
        wait_for(lambda: any(r["attempts"] >= 1 and "451" in (r["last_error"] or "")
                             for r in log(data_dir, "810004")),
                 "a refused attempt", DEADLINE_S)  # fmt: skip
    finally:
        smtp.answer("data", None)
    (row,) = wait_for(lambda: settled(data_dir, "810004", 1), "the retry", DEADLINE_S)
    assert row["state"] == "sent" and row["attempts"] >= 2
    assert len(mail_to(smtp, "rita@example.com")) == 1
    smtp.answer("rcpt", "550 5.1.1 no such user")
    try:
        post(notifying, "810004", "E130", "002")
        rows = wait_for(lambda: settled(data_dir, "810004", 2), "the failure", DEADLINE_S)
    finally:
        smtp.answer("rcpt", None)
    failed = [r for r in rows if r["state"] == "failed"]
    assert len(failed) == 1 and failed[0]["attempts"] == 1
    assert "550" in failed[0]["last_error"]
    assert len(mail_to(smtp, "rita@example.com")) == 1


def test_http_429_and_5xx_are_retried_400_ends_failed(notifying: Station, sms: SmsGateway) -> None:
    data_dir = notifying.data_dir
    account(data_dir, "810005", subscriber("Sam", "alarm", "sms", phone="+15550005"),
            subscriber("Bad", "alarm", "sms", phone="5550006"))  # fmt: skip

    def newest_to_sam() -> dict[str, Any]:
        return max((r for r in log(data_dir, "810005") if r["to"] == "+15550005"),
                   key=lambda r: int(r["id"]), default={"last_error": None})  # fmt: skip

    for n, status in enumerate((429, 503)):
        sms.fail_with = status
        try:
            post(notifying, "810005", "E130", f"{status % 100:03d}")
            wait_for(lambda s=status: str(s) in (newest_to_sam()["last_error"] or ""),
                     f"an answer {status}", DEADLINE_S)  # fmt: skip
        finally:
            sms.fail_with = None
        rows = wait_for(lambda n=n: settled(data_dir, "810005", 2 * (n + 1)), "the retry",
                        DEADLINE_S)  # fmt: skip
    sam = [r for r in rows if r["to"] == "+15550005"]
    assert {r["state"] for r in sam} == {"sent"} and all(r["attempts"] >= 2 for r in sam)
    assert [m["to"] for m in sms.sent].count("+15550005") == 2
    bad = [r for r in rows if r["to"] == "5550006"]
    assert len(bad) == 2
    assert all(r["state"] == "failed" and "400" in r["last_error"] for r in bad)


# nodes of their own ----------------------------------------------------------------------------


def own_station(data_dir: Path, server: Server) -> Station:
    return Station(server, provision_token(data_dir), data_dir)


def provision_token(data_dir: Path) -> str:
    token = provision(data_dir)
    run(data_dir, "dnis", "add", DNIS, "--mask", "81####")
    return token


def kill_node(server: Server) -> None:
    """SIGKILL every process of the node (its delivery process too)."""
    for pid in server.pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert server.process is not None
    server.process.wait(timeout=30)


def test_a_node_killed_with_messages_queued_sends_each_once_after_its_restart(
    tmp_path: Path,
) -> None:
    smtp = SmtpServer(tmp_path / "smtp", free_port())  # not started: the gateway is down
    token = provision_token(tmp_path)
    account(tmp_path, "810006", subscriber("Kim", "alarm", "email"))
    set_gateways(tmp_path, smtp.port)
    server = Server(tmp_path).start()
    try:
        station = Station(server, token, tmp_path)
        for zone in ("001", "002", "003"):
            post(station, "810006", "E130", zone)
        wait_for(lambda: any(r["attempts"] >= 1 for r in log(tmp_path, "810006")),
                 "a refused attempt", DEADLINE_S)  # fmt: skip
        kill_node(server)
        smtp.start()
        server = Server(tmp_path, extra_args=("--workers", "2")).start()
        rows = wait_for(lambda: settled(tmp_path, "810006", 3), "every message", DEADLINE_S)
        # the delivery process's counts join those of the node's workers
        metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
    finally:
        server.kill()
        smtp.stop()
    assert {r["state"] for r in rows} == {"sent"}
    sent = re.search(r'alarmhub_notifications_total\{channel="email",outcome="sent"\} (\S+)',
                     metrics)  # fmt: skip
    assert sent is not None and float(sent.group(1)) == 3, metrics[-1500:]
    subjects = Counter(m.message["Subject"] for m in mail_to(smtp, "kim@example.com"))
    assert len(subjects) == 3 and set(subjects.values()) == {1}, subjects


@pytest.mark.backends("postgresql")
def test_two_nodes_send_each_message_once(tmp_path: Path) -> None:
    smtp = SmtpServer(tmp_path / "smtp", free_port()).start()
    token = provision_token(tmp_path)
    numbers = [f"81{n:04d}" for n in range(10, 16)]
    for number in numbers:
        account(tmp_path, number, subscriber(f"C{number}", "alarm", "email"))
    set_gateways(tmp_path, smtp.port)
    url = {"ALARMHUB_DATABASE_URL": database_url(tmp_path)}
    nodes = start_all(Server(tmp_path / f"node{n}", env=url) for n in range(2))
    try:
        for n, number in enumerate(numbers):  # posted to either node
            station = Station(nodes[n % 2], token, tmp_path)
            post(station, number, "E130", "001")
            post(station, number, "E130", "002")
        for number in numbers:
            wait_for(lambda n=number: settled(tmp_path, n, 2), "every message", DEADLINE_S)
    finally:
        for node in nodes:
            node.stop()
        smtp.stop()
    received = Counter((m.rcpt_tos[0], m.message["Subject"]) for m in smtp.arrived())
    assert len(received) == 2 * len(numbers)
    assert set(received.values()) == {1}, received.most_common(3)
    assert all(r["attempts"] == 1 for n in numbers for r in log(tmp_path, n))


def test_a_storm_reaches_its_subscriber_as_a_few_messages_and_digests(tmp_path: Path) -> None:
    a_storm_reaches_its_subscriber(tmp_path, writer_killed=False)


@pytest.mark.backends("sqlite")
def test_a_storm_reaches_its_subscriber_with_the_writer_killed_meanwhile(tmp_path: Path) -> None:
    """On SQLite the node's writer records what the delivery process sent: a node of two
    workers, its writer SIGKILLed once the first message has arrived."""
    a_storm_reaches_its_subscriber(tmp_path, writer_killed=True)


def a_storm_reaches_its_subscriber(tmp_path: Path, writer_killed: bool) -> None:
    smtp = SmtpServer(tmp_path / "smtp", free_port()).start()
    token = provision_token(tmp_path)
    account(tmp_path, "810020", subscriber("Stu", "alarm", "email"))
    workers = ("--workers", "2") if writer_killed else ()
    server = Server(tmp_path, extra_args=workers, env={"ALARMHUB_RUNAWAY_LIMIT": "100000"})
    server.start()
    storm = 200
    try:
        station = Station(server, token, tmp_path)
        for n in range(storm):
            post(station, "810020", "E130", f"{n % 999 + 1:03d}")
        # the storm waits for its gateway (as when the gateway is down): once it is set, the
        # recipient gets the window's first messages, then one digest of the rest; posted one
        # by one with the gateway up, alarms after that digest would wait a whole window
        wait_for(lambda: len(log(tmp_path, "810020")) >= storm, "the storm queued", DEADLINE_S)
        set_gateways(tmp_path, smtp.port)
        if writer_killed:
            writer = wait_for_writer(server)
            wait_for(lambda: smtp.arrived(), "the first message", DEADLINE_S)
            os.kill(writer, signal.SIGKILL)
            wait_for_writer(server, not_pid=writer)  # the node starts it again
        rows = wait_for(lambda: settled(tmp_path, "810020", storm), "the storm", 3 * DEADLINE_S)
    finally:
        server.kill()
        smtp.stop()
    entire = log(tmp_path, "810020")
    digests = {r["id"]: r for r in entire if r["kind"] == digest.KIND}
    assert len(rows) == storm and {r["state"] for r in rows} == {"sent"}
    # every event accounted for: sent alone, or within a digest that was sent
    alone = [r for r in rows if r["digest_id"] is None]
    carried = Counter(r["digest_id"] for r in rows if r["digest_id"] is not None)
    assert set(carried) == set(digests) and digests
    assert len(alone) + sum(carried.values()) == storm
    mail = mail_to(smtp, "stu@example.com")
    assert len(mail) == len(alone) + len(digests) < storm
    for digest_id, count in carried.items():
        subject = next(m.message["Subject"] for m in mail
                       if m.message["Subject"] == digests[digest_id]["subject"])  # fmt: skip
        assert subject.startswith(f"810020: {count} events from ")
    # never more than the rate in any window (the times the node recorded the sends)
    sends = sorted(r["sent_us"] for r in [*alone, *digests.values()])
    window = digest.WINDOW_SECONDS * 1_000_000
    for n, at in enumerate(sends):
        assert sum(1 for t in sends[n:] if t < at + window) <= digest.RATE
