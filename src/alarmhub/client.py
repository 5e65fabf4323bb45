"""The integrators' client: signals and heartbeats to the signaling interface, signed queries
to the monitoring query interface, and the integrator API's client (``alarmhub.api_client``).

>>> from alarmhub.client import SignalClient
>>> client = SignalClient("http://127.0.0.1:8080", token="...")
>>> client.send("site1", "demo", dnis="1234", panel="0042", code="E130", zone="015")
Answer(status_code=200, body={'status_code': 200, 'status': 'success'})
"""

from __future__ import annotations

import secrets
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from alarmhub.api_client import ApiClient, ApiError, StreamEvent
from alarmhub.xm import digest

HEARTBEAT_SECONDS = 20
__all__ = ["Answer", "ApiClient", "ApiError", "QueryClient", "SignalClient", "StreamEvent"]


def _tls(url: str) -> ssl.SSLContext | bool:
    """TLS verification for a client of ``url``: the default trust store for ``https``. Plain
    ``http`` needs none, and loading it costs about 40 ms, a third of a command's start-up: its
    context trusts no certificate, so a TLS proxy, if one is configured, fails closed."""
    if url.lower().startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return True


@dataclass(frozen=True, slots=True)
class Answer:
    """What the service answered: the HTTP status and the decoded envelope."""

    status_code: int
    body: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.status_code == 200 and self.body.get("status") == "success"


class SignalClient:
    """A small client of the signaling interface; usable as a context manager."""

    def __init__(self, url: str, token: str, timeout: float = 10.0) -> None:
        self._http = httpx.Client(
            base_url=url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            verify=_tls(url),
        )

    def __enter__(self) -> SignalClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @staticmethod
    def _path(source: str, destination: str, operation: str) -> str:
        return f"/rx/{quote(source, safe='')}:{quote(destination, safe='')}/{operation}"

    @staticmethod
    def _answer(response: httpx.Response) -> Answer:
        try:
            body = response.json()
        except ValueError:
            body = {"status": "error", "message": response.text[:200]}
        if not isinstance(body, dict):
            body = {"status": "error", "message": str(body)[:200]}
        return Answer(response.status_code, body)

    def send(
        self,
        source: str,
        destination: str,
        *,
        dnis: str,
        panel: str,
        code: str,
        area: str | None = None,
        zone: str | None = None,
        idempotency_key: str | None = None,
    ) -> Answer:
        """Queue one Contact ID signal for ``destination`` (the receiver driver)."""
        body = {"dnis": dnis, "panel": panel, "code": code}
        if area is not None:
            body["area"] = area
        if zone is not None:
            body["zone_or_user"] = zone
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        response = self._http.post(
            self._path(source, destination, "contact_id"), json=body, headers=headers
        )
        return self._answer(response)

    def heartbeat(self, source: str, destination: str) -> Answer:
        """Tell the receiver driver that ``source`` is alive (call every 20 seconds)."""
        return self._answer(self._http.get(self._path(source, destination, "hb")))


class QueryClient:
    """A client of the monitoring query interface that signs each request.

    >>> from alarmhub.client import QueryClient
    >>> client = QueryClient("http://127.0.0.1:8080", appkey="reports",
    ...                      username="documentation", password="secretpassword")
    >>> client.query("XMAPEND", SOURCE="DATAENTRY").body["TOTAL_RECORDS"]
    '0'
    """

    def __init__(
        self,
        url: str,
        *,
        appkey: str,
        username: str,
        password: str,
        scheme: str = digest.SHA1,
        timeout: float = 30.0,
    ) -> None:
        if scheme not in digest.SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(digest.SCHEMES)}")
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout, verify=_tls(url))
        self._appkey = appkey
        self._username = username
        self._password = password
        self._scheme = scheme

    def __enter__(self) -> QueryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def headers(self, fields: dict[str, str]) -> dict[str, str]:
        """The five X-SVC headers for a request with these form fields (fresh date and nonce)."""
        date = digest.date_header()
        nonce = secrets.token_hex(10)
        if self._scheme == digest.SHA1:
            signed = digest.sha1_digest(self._appkey, self._username, date, nonce, self._password)
        else:
            signed = digest.hmac_digest(
                self._appkey, self._username, date, nonce, self._password, fields.items()
            )
        return {
            "X-SVC-APPKEY": self._appkey,
            "X-SVC-USERNAME": self._username,
            "X-SVC-DATE": date,
            "X-SVC-NONCE": nonce,
            "X-SVC-DIGEST": signed,
            "Accept": "application/json",
        }

    def query(self, method: str, **fields: str) -> Answer:
        """Call ``method`` (XMHIST, XMAPEND, XMAINPRO) with these form fields."""
        form = {"*setMethod": method, **fields}
        response = self._http.post(
            "/rest/rest.php",
            params={"dataSource": "methods", "*view": "xmsubmit"},
            files={name: (None, value) for name, value in form.items()},
            headers=self.headers(form),
        )
        return SignalClient._answer(response)
