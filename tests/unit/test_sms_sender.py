"""The SMS sender against a gateway that answers as Twilio's Messages resource does (a local
HTTP server): the Twilio form and the JSON shape, HTTP basic credentials, and how each answer
ends the attempt (decisions section 13: 2xx sent, 5xx/429/no answer retried, other 4xx failed)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from alarmhub.core import delivery
from alarmhub.outbound import sms
from tests.support.sms_gateway import ACCOUNT_SID, AUTH_TOKEN, SmsGateway
from tests.support.webhook_receiver import closed_port

TO, FROM = "+15005550006", "+15005550001"
TEXT = "700001 BURGLARY ALARM"


@pytest.fixture
def gateway() -> Iterator[SmsGateway]:
    running = SmsGateway().start()
    yield running
    running.stop()


def send(
    gateway: sms.SmsGateway, to: str = TO, text: str = TEXT, timeout: float = 10.0
) -> delivery.Attempt:
    async def attempt() -> delivery.Attempt:
        sender = sms.SmsSender(gateway, timeout=timeout)
        try:
            return await sender.send(to, text)
        finally:
            await sender.close()

    return asyncio.run(attempt())


def twilio(gateway: SmsGateway, password: str = AUTH_TOKEN) -> sms.SmsGateway:
    return sms.SmsGateway(gateway.twilio_url, sms.TWILIO, FROM, ACCOUNT_SID, password)


def test_the_twilio_form_is_sent(gateway: SmsGateway) -> None:
    assert send(twilio(gateway)) == delivery.sent(201)
    assert gateway.sent == [{"to": TO, "from": FROM, "body": TEXT}]
    [request] = gateway.requests
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"


def test_the_json_shape_is_sent(gateway: SmsGateway) -> None:
    shape = sms.SmsGateway(gateway.json_url, sms.JSON, FROM, ACCOUNT_SID, AUTH_TOKEN)
    assert send(shape) == delivery.sent(201)
    assert gateway.sent == [{"to": TO, "from": FROM, "body": TEXT}]
    assert gateway.requests[0].headers["content-type"] == "application/json"


def test_hostile_text_stays_the_body(gateway: SmsGateway) -> None:
    hostile = "zone 3&To=+19995550000&Body=forged\r\nX-Injected: 1"
    assert send(twilio(gateway), text=hostile).verdict == delivery.SENT
    assert gateway.sent == [{"to": TO, "from": FROM, "body": hostile}]


def test_wrong_credentials_fail_for_good(gateway: SmsGateway) -> None:
    attempt = send(twilio(gateway, password="wrong"))
    assert (attempt.verdict, attempt.code) == (delivery.FAILED, 401)
    assert attempt.error == "answered HTTP 401: Authenticate"
    assert gateway.sent == []


def test_a_bad_number_fails_for_good_with_the_gateways_message(gateway: SmsGateway) -> None:
    attempt = send(twilio(gateway), to="12345")
    assert (attempt.verdict, attempt.code) == (delivery.FAILED, 400)
    assert "Invalid 'To' Phone Number" in (attempt.error or "")


@pytest.mark.parametrize("status", [429, 500, 503])
def test_429_and_5xx_are_retried(gateway: SmsGateway, status: int) -> None:
    gateway.fail_with = status
    attempt = send(twilio(gateway))
    assert (attempt.verdict, attempt.code) == (delivery.RETRY, status)
    gateway.fail_with = None  # the gateway is back: the retry goes
    assert send(twilio(gateway)).verdict == delivery.SENT
    assert len(gateway.sent) == 1


def test_a_gateway_that_is_down_is_retried() -> None:
    url = f"http://127.0.0.1:{closed_port()}/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json"
    attempt = send(sms.SmsGateway(url, user=ACCOUNT_SID, password=AUTH_TOKEN))
    assert attempt.verdict == delivery.RETRY
    assert "ConnectError" in (attempt.error or "")


def test_a_gateway_that_does_not_answer_is_retried(gateway: SmsGateway) -> None:
    gateway.hang = True
    attempt = send(twilio(gateway), timeout=0.5)
    assert attempt.verdict == delivery.RETRY
    assert "no answer in time" in (attempt.error or "")


def test_the_password_is_not_in_the_gateways_repr() -> None:
    gateway = sms.SmsGateway("https://sms.example/send", user="u", password="hunter2")
    assert "hunter2" not in repr(gateway)


@pytest.mark.parametrize("url", ["ftp://sms.example/send", "https:///send", "sms.example"])
def test_a_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        sms.SmsGateway(url)


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="format"):
        sms.SmsGateway("https://sms.example/send", "xml")
