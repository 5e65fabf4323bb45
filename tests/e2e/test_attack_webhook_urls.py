"""Attacks through a webhook's URL: a target inside the station's network (the database's port,
the cloud's metadata address, a private receiver) refused by ``webhook add`` unless the setting
``webhook_allow_private`` allows it, every address a host name resolves to checked, and a URL's
user and password refused, and never shown by ``webhook list``.

The command runs as the administrator would (``tests.support.processes.cli``), on SQLite and on
PostgreSQL: a refused webhook leaves nothing in the store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Connection, update

from alarmhub.clock import now_us
from alarmhub.core import events
from alarmhub.store import engine as store_engine
from alarmhub.store import events as outbox
from alarmhub.store import operations
from alarmhub.store import schema as s
from alarmhub.store.commit import lock_incidents
from tests.support.database import database_url
from tests.support.processes import Server, as_list, cli, cli_json, wait_for
from tests.support.webhook_receiver import ALLOW_PRIVATE, Receiver

pytestmark = pytest.mark.backends("sqlite", "postgresql")


def add(data_dir: Path, url: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = cli(data_dir, "webhook", "add", url, "--event", events.ALARM_RAISED, "--json",
               check=False, env=env)  # fmt: skip
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1:5432/", "loopback"),  # the database's port
        ("http://localhost:8080/hook", "loopback"),  # a name: its addresses are checked
        ("http://[::1]/hook", "loopback"),
        ("http://[::ffff:127.0.0.1]/hook", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/hook", "link-local"),
        ("http://10.0.0.5/hook", "private"),
        ("http://172.16.3.4/hook", "private"),
        ("https://192.168.1.1/hook", "private"),
        ("http://100.64.0.1/hook", "private"),  # shared (carrier-grade NAT)
        ("http://[fd00::1]/hook", "private"),  # ULA
        ("http://0.0.0.0:9/hook", "unspecified"),
        ("http://[::]/hook", "unspecified"),
        ("http://224.0.0.1/hook", "multicast"),
        ("http://[ff02::1]/hook", "multicast"),
    ],
)
def test_a_target_that_is_not_public_is_refused_by_default(
    tmp_path: Path, url: str, kind: str
) -> None:
    """Before: every one was added, and the node would have posted to it."""
    code, said = add(tmp_path, url)
    assert code == 1, said
    assert f"the URL's host is a {kind} address" in said
    assert "ALARMHUB_WEBHOOK_ALLOW_PRIVATE=1" in said
    assert cli_json(tmp_path, "webhook", "list") == []
    code, said = add(tmp_path, url, ALLOW_PRIVATE)
    assert code == 0, said


def test_a_public_address_is_added_and_a_name_that_does_not_resolve_is_not(
    tmp_path: Path,
) -> None:
    code, said = add(tmp_path, "https://1.1.1.1/hook")
    assert code == 0, said
    code, said = add(tmp_path, "https://hooks.invalid/hook")
    assert code == 1, said
    assert "the URL's host 'hooks.invalid' does not resolve" in said
    assert len(as_list(cli_json(tmp_path, "webhook", "list"))) == 1


@pytest.mark.parametrize(
    "url", ["https://user:s3cret@1.1.1.1/hook", "https://:s3cret@1.1.1.1/", "http://u@1.1.1.1/"]
)
def test_a_user_or_password_in_the_url_is_refused_even_with_private_targets(
    tmp_path: Path, url: str
) -> None:
    """Before: added, and shown in clear by ``webhook list``."""
    code, said = add(tmp_path, url, ALLOW_PRIVATE)
    assert code == 1, said
    assert "the URL must not carry a user or password" in said
    assert "s3cret" not in said
    assert cli_json(tmp_path, "webhook", "list") == []


def test_webhook_list_never_shows_a_password_stored_before(tmp_path: Path) -> None:
    """A webhook added by an older version with ``user:password@`` keeps working, and is
    listed with ``***`` in their place."""
    code, said = add(tmp_path, "https://1.1.1.1:8443/hook?a=b")
    assert code == 0, said
    webhook_id = json.loads(said)["id"]
    engine = store_engine.open_engine(database_url(tmp_path))
    try:
        with engine.begin() as conn:
            old = "https://user:s3cret@1.1.1.1:8443/hook?a=b"
            hook = s.webhook.c.webhook_id == webhook_id
            conn.execute(update(s.webhook).where(hook).values(url=old))
    finally:
        engine.dispose()
    listed = as_list(cli_json(tmp_path, "webhook", "list"))
    assert [h["url"] for h in listed] == ["https://***@1.1.1.1:8443/hook?a=b"]
    shown = cli(tmp_path, "webhook", "list").stdout
    assert "s3cret" not in shown and "user" not in shown


def publish_alarm(data_dir: Path) -> str:
    """An alarm.raised event in the outbox, as the station's changes write it; its
    webhook-id."""
    engine = store_engine.open_engine(database_url(data_dir))
    try:

        def work(conn: Connection) -> int:
            lock_incidents(conn)
            data = {"account": "700001", "incident_number": 1, "alarm_id": 1, "type": "BURG",
                    "hist_text": "BURGLARY", "priority": "2"}  # fmt: skip
            outbox.publish(conn, events.ALARM_RAISED, "700001", data, now_us())
            return int(outbox.newest(conn))

        return events.event_id_text(operations.run(engine, work))
    finally:
        engine.dispose()


def errors(data_dir: Path) -> list[str]:
    found = as_list(cli_json(data_dir, "webhook", "deliveries"))
    return [str(d["last_error"]) for d in found if d["last_error"]]


@pytest.mark.backends("sqlite")  # the check is the sender's: the database plays no part
def test_a_host_that_resolves_to_a_private_address_when_sending_is_not_connected_to(
    tmp_path: Path,
) -> None:
    """DNS rebinding: a host whose name resolved to a public address when the webhook was added
    resolves to a private one when the node sends (here: ``localhost``, added while private
    targets were allowed, then sent by a node that does not allow them). The node resolves the
    host when it connects, checks every address and connects to none: the receiver gets nothing,
    and the delivery's error says why. With the setting, the same node delivers it. Before: the
    node connected to whatever the name resolved to then."""
    receiver = Receiver().start()
    try:
        url = receiver.url.replace("127.0.0.1", "localhost")
        code, said = add(tmp_path, url, ALLOW_PRIVATE)
        assert code == 0, said
        event = publish_alarm(tmp_path)
        node = Server(tmp_path).start()
        try:
            said = wait_for(lambda: errors(tmp_path), "the delivery's error", 30)
        finally:
            node.kill()
        assert "the URL's host is a loopback address" in said[0], said
        assert receiver.delivered_ids() == []
        node = Server(tmp_path, env=dict(ALLOW_PRIVATE)).start()
        try:
            # tried again on its schedule (the first retries 2 s and 8 s after)
            wait_for(lambda: receiver.delivered_ids(), "delivered with the setting", 60)
        finally:
            node.kill()
        assert receiver.delivered_ids() == [event]
    finally:
        receiver.stop()
