"""SMS, the sender: one text message POSTed to an HTTP gateway with httpx, and how the attempt
ended (:mod:`alarmhub.core.delivery`, decisions section 13). No database: the notification
channel gives it what to send.

Two shapes: ``twilio`` (the default) POSTs the form fields ``To``, ``From``, ``Body`` to the URL
as given (Twilio's Messages resource, ``.../Accounts/{AccountSid}/Messages.json``); ``json``
POSTs ``{"to", "from", "text"}``. Credentials go as HTTP basic authentication. A 2xx answer sent
it; 5xx, 429 and no answer (refused or broken connections, timeouts) are retried; any other
answer (400 bad number, 401 bad credentials, a redirect: none is followed) fails it for good, its
error text holding the gateway's own ``message`` where its answer has one. At most
:data:`ANSWER_READ_BYTES` of an answer are read; no proxy is taken from the environment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from alarmhub.core import delivery
from alarmhub.core.notifications import JSON, SMS_FORMATS, TWILIO

__all__ = ["JSON", "TWILIO", "SmsGateway", "SmsSender"]
TIMEOUT_SECONDS = 10.0
ANSWER_READ_BYTES = 16 * 1024
TEXT_MAX = 1600
"""A message's text is cut to this many characters (Twilio's limit for one message body)."""


@dataclass(frozen=True)
class SmsGateway:
    """Where text messages go: ``url``, ``format`` (``twilio`` or ``json``), the ``sender`` number
    (``From``; "" leaves it out, for gateways that set it themselves), HTTP basic credentials
    when a user is given. What a station may set is checked when it is set
    (:mod:`alarmhub.core.notifications`); ``ValueError`` here for a URL that is not HTTP."""

    url: str
    format: str = TWILIO
    sender: str = ""
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError("an SMS gateway's URL is http:// or https:// with a host")
        if self.format not in SMS_FORMATS:
            raise ValueError(f"the format must be one of {', '.join(SMS_FORMATS)}")


class SmsSender:
    """Sends text messages through one gateway, on kept-alive connections: :meth:`send`; then
    :meth:`close`."""

    def __init__(self, gateway: SmsGateway, *, timeout: float = TIMEOUT_SECONDS) -> None:
        self.gateway = gateway
        auth = None
        if gateway.user is not None:
            auth = httpx.BasicAuth(gateway.user, gateway.password or "")
        self._client = httpx.AsyncClient(
            auth=auth,
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
            headers={"Accept-Encoding": "identity"},  # read as sent: no decompression bomb
        )

    async def close(self) -> None:
        await self._client.aclose()

    def request(self, to: str, text: str) -> dict[str, Any]:
        """What is POSTed (httpx's ``data=`` or ``json=``)."""
        text = text[:TEXT_MAX]
        sender = self.gateway.sender
        if self.gateway.format == JSON:
            body = {"to": to, "text": text} | ({"from": sender} if sender else {})
            return {"json": body}
        form = {"To": to, "Body": text} | ({"From": sender} if sender else {})
        return {"data": form}

    async def send(self, to: str, text: str) -> delivery.Attempt:
        """Send one message to the number ``to``; how the attempt ended."""
        try:
            async with self._client.stream(
                "POST", self.gateway.url, **self.request(to, text)
            ) as answer:
                body = await _bounded(answer)
        except httpx.TimeoutException as exc:
            return delivery.retry(f"no answer in time ({type(exc).__name__})")
        except (httpx.TransportError, OSError) as exc:
            return delivery.retry(f"{type(exc).__name__}: {exc}")
        attempt = delivery.http_attempt(answer.status_code)
        said = _message(body)
        if attempt.verdict == delivery.SENT or not said:
            return attempt
        return delivery.Attempt(attempt.verdict,
                                delivery.error_text(f"{attempt.error}: {said}"),
                                attempt.code)  # fmt: skip


async def _bounded(answer: httpx.Response) -> bytes:
    """The answer's first :data:`ANSWER_READ_BYTES` (the rest is not read)."""
    read = bytearray()
    async for chunk in answer.aiter_raw():
        read += chunk
        if len(read) >= ANSWER_READ_BYTES:
            break
    return bytes(read[:ANSWER_READ_BYTES])


def _message(body: bytes) -> str:
    """The gateway's own ``message`` in a JSON answer (Twilio's error answers have one)."""
    try:
        answer = json.loads(body)
    except ValueError:
        return ""
    said = answer.get("message") if isinstance(answer, dict) else None
    return said if isinstance(said, str) else ""
