"""The integrators' client: send signals and heartbeats to an alarmhub signaling interface.

>>> from alarmhub.client import SignalClient
>>> client = SignalClient("http://127.0.0.1:8080", token="...")
>>> client.send("site1", "demo", dnis="1234", panel="0042", code="E130", zone="015")
Answer(status_code=200, body={'status_code': 200, 'status': 'success'})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

HEARTBEAT_SECONDS = 20


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
