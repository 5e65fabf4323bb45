"""Webhooks' rules: signatures checked by the independent ``standardwebhooks`` package, which
answers deliver, URLs and subscriptions (the retry schedule: test_core_delivery)."""

from __future__ import annotations

import base64
import ipaddress
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from alarmhub.core import webhooks
from alarmhub.core.events import ALARM_RAISED, KINDS, event_id_text

BODY = b'{"type":"alarm.raised","timestamp":"2027-01-15T08:00:00.000Z","data":{"account":"700001"}}'


def test_a_secret_is_whsec_and_32_random_bytes() -> None:
    secret = webhooks.new_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert webhooks.new_secret() != secret


def test_standardwebhooks_verifies_the_signed_headers() -> None:
    secret = webhooks.new_secret()
    now = int(time.time())
    headers = webhooks.headers(secret, event_id_text(42), now, BODY)
    assert headers["webhook-id"] == "evt_42"
    assert headers["webhook-timestamp"] == str(now)
    assert headers["content-type"] == "application/json"
    assert Webhook(secret).verify(BODY, headers)["data"]["account"] == "700001"


@pytest.mark.parametrize("tamper", ["body", "id", "timestamp", "secret"])
def test_standardwebhooks_refuses_what_was_not_signed(tamper: str) -> None:
    secret = webhooks.new_secret()
    now = int(time.time())
    headers = webhooks.headers(secret, "evt_1", now, BODY)
    body = BODY
    if tamper == "body":
        body = BODY.replace(b"700001", b"700002")
    elif tamper == "id":
        headers["webhook-id"] = "evt_2"
    elif tamper == "timestamp":
        headers["webhook-timestamp"] = str(now - 1)
    else:
        secret = webhooks.new_secret()
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, headers)


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_a_2xx_delivers(status: int) -> None:
    assert webhooks.delivered(status)


@pytest.mark.parametrize("status", [None, 100, 301, 400, 410, 500, 503])
def test_anything_else_fails(status: int | None) -> None:
    assert not webhooks.delivered(status)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080/hook", "https://hooks.example.com/a?b=c", "http://[::1]/x"]
)
def test_http_and_https_urls_are_taken(url: str) -> None:
    assert webhooks.url_problem(url) is None


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/", "file:///etc/passwd", "example.com/hook", "http:///nohost",
     "http://example.com:99999/", "http://exa mple.com/", "http://example.com/#frag",
     "http://example.com/" + "a" * 2000, "javascript:alert(1)", ""],
)  # fmt: skip
def test_other_urls_are_refused(url: str) -> None:
    assert webhooks.url_problem(url)


@pytest.mark.parametrize(
    "url", ["http://u:p@example.com/", "http://u@example.com/", "http://:p@x/"]
)
def test_a_user_or_password_is_refused(url: str) -> None:
    assert webhooks.url_problem(url) == (
        "the URL must not carry a user or password (user:password@...): it would be shown"
    )


@pytest.mark.parametrize(
    ("address", "kind"),
    [("127.0.0.2", "loopback"), ("::1", "loopback"), ("::ffff:10.1.2.3", "private"),
     ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("192.168.0.1", "private"),
     ("100.64.0.1", "private"), ("fd12::1", "private"), ("192.0.2.1", "private"),
     ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("239.1.1.1", "multicast"),  # noqa: S104
     ("ff0e::1", "multicast"), ("1.1.1.1", None), ("2606:4700::1111", None)],
)  # fmt: skip
def test_only_public_addresses_are_targets_by_default(address: str, kind: str | None) -> None:
    problem = webhooks.address_problem(ipaddress.ip_address(address))
    if kind is None:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(f"the URL's host is a {kind} address")


@pytest.mark.parametrize(
    ("url", "shown"),
    [("https://u:p@h.example:8443/a?b=c", "https://***@h.example:8443/a?b=c"),
     ("http://u@[::1]/x", "http://***@[::1]/x"), ("https://h.example/a", "https://h.example/a"),
     ("http://[bad/", "http://[bad/")],
)  # fmt: skip
def test_a_listed_url_never_shows_a_user_or_password(url: str, shown: str) -> None:
    assert webhooks.shown_url(url) == shown


def test_subscriptions() -> None:
    assert webhooks.subscription_problem(KINDS, "7001") is None
    assert webhooks.subscription_problem([], "")
    assert webhooks.subscription_problem(["alarm.exploded"], "")
    assert webhooks.subscription_problem([ALARM_RAISED], "70-1")
    kinds = frozenset([ALARM_RAISED])
    assert webhooks.wants(kinds, "7001", ALARM_RAISED, "700123")
    assert not webhooks.wants(kinds, "7001", ALARM_RAISED, "700223")
    assert not webhooks.wants(kinds, "", "alarm.taken", "700123")
