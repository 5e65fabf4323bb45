"""A client of the integrator API (``/api/v1``): requests with the key, problem details as one
exception, pages followed for you, the event stream resumed where it stopped.

>>> from alarmhub.client import ApiClient
>>> api = ApiClient("http://127.0.0.1:8080", key="ahk_...")
>>> account, etag = api.get_with_etag("/accounts/700001")
>>> api.put("/accounts/700001", {**account, "city": "Springfield"}, if_match=etag)
>>> for account in api.pages("/accounts"):
...     print(account["account"])
>>> for event in api.events(last_event_id="evt_41"):
...     print(event.id, event.kind, event.data["data"]["hist_text"])
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

BASE = "/api/v1"


class ApiError(Exception):
    """A refusal of the integrator API: its HTTP status, stable ``code`` and ``detail``."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of the event stream: its id (to resume after), kind and body. The kind
    ``gap`` (no id) says events before it may be missing: resumed from too far back."""

    id: str
    kind: str
    data: dict[str, Any]


class ApiClient:
    """A client of the integrator API with one key; usable as a context manager."""

    def __init__(
        self,
        url: str,
        key: str,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=url.rstrip("/") + BASE,
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        if_match: str | None = None,
    ) -> httpx.Response:
        """One request; a refusal raises :class:`ApiError`."""
        headers = {"If-Match": if_match} if if_match else {}
        answer = self._http.request(
            method, path, json=dict(body) if body is not None else None,
            params=dict(params or {}), headers=headers,
        )  # fmt: skip
        if answer.status_code >= 400:
            raise _error(answer)
        return answer

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params).json()

    def get_with_etag(self, path: str) -> tuple[Any, str | None]:
        """A resource and its ETag (for ``if_match`` on the change that follows)."""
        answer = self.request("GET", path)
        return answer.json(), answer.headers.get("etag")

    def put(self, path: str, body: Mapping[str, Any], if_match: str | None = None) -> Any:
        return _json(self.request("PUT", path, body, if_match=if_match))

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return _json(self.request("POST", path, body))

    def patch(self, path: str, body: Mapping[str, Any], if_match: str | None = None) -> Any:
        return _json(self.request("PATCH", path, body, if_match=if_match))

    def delete(self, path: str, if_match: str | None = None) -> None:
        self.request("DELETE", path, if_match=if_match)

    def pages(self, path: str, limit: int = 1000, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a paginated collection, following ``next_cursor`` page by page."""
        cursor: str | None = None
        while True:
            query = {**params, "limit": limit, **({"cursor": cursor} if cursor else {})}
            answer = self.get(path, **query)
            yield from answer["items"]
            cursor = answer.get("next_cursor")
            if not cursor:
                return

    def events(self, last_event_id: str | None = None) -> Iterator[StreamEvent]:
        """The event stream, from after ``last_event_id`` (or from now). Iterate for as long as
        you listen; after a disconnect, call again with the last id you saw: nothing is missed."""
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        with self._http.stream("GET", "/events", headers=headers, timeout=None) as answer:
            if answer.status_code >= 400:
                answer.read()
                raise _error(answer)
            fields: dict[str, str] = {}
            for line in answer.iter_lines():
                if not line:  # a blank line ends an event
                    if "data" in fields:  # a ``gap`` event has no id: events may be missing
                        kind = fields.get("event", "message")
                        yield StreamEvent(fields.get("id", ""), kind, json.loads(fields["data"]))
                    fields = {}
                elif not line.startswith(":"):  # a comment keeps the connection alive
                    name, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    fields[name] = fields[name] + "\n" + value if name in fields else value


def _json(answer: httpx.Response) -> Any:
    return answer.json() if answer.content else None


def _error(answer: httpx.Response) -> ApiError:
    try:
        problem = answer.json()
        return ApiError(answer.status_code, str(problem["code"]), str(problem.get("detail", "")))
    except (ValueError, KeyError, TypeError):
        return ApiError(answer.status_code, f"HTTP-{answer.status_code}", answer.text[:200])
