"""The operator console as a browser's scripts use it: sign-in with the form's CSRF token, the
JSON API with the page's CSRF header, the queues of a snapshot, the server-sent events."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

PASSWORD = "correct-horse-battery"
SUCCESS = {"status_code": 200, "status": "success"}
Row = dict[str, Any]


@dataclass
class Console:
    """One browser's worth of console: its cookies, and the CSRF token of its page."""

    url: str
    transport: httpx.BaseTransport | None = None  # a node in the test's process: its transport
    client: httpx.Client = field(init=False)
    csrf: str = ""

    def __post_init__(self) -> None:
        self.client = httpx.Client(
            base_url=self.url, timeout=30, follow_redirects=False, transport=self.transport
        )

    def close(self) -> None:
        self.client.close()

    def login_form(self) -> str:
        page = self.client.get("/console/login")
        assert page.status_code == 200, page.text
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found, page.text
        return html.unescape(found.group(1))

    def sign_in_answer(
        self, code: str, password: str = PASSWORD, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        token = self.login_form()
        form = {"csrf": token, "code": code, "password": password}
        return self.client.post("/console/login", data=form, headers=headers)

    def sign_in(self, code: str, password: str = PASSWORD) -> Console:
        answer = self.sign_in_answer(code, password)
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == "/console"
        page = self.client.get("/console")
        assert page.status_code == 200, page.text
        found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
        assert found, page.text
        self.csrf = html.unescape(found.group(1))
        return self

    def get(self, path: str) -> httpx.Response:
        return self.client.get(f"/console/api{path}")

    def post(
        self, path: str, body: object = None, csrf: str | None = None, raw: bytes | None = None
    ) -> httpx.Response:
        headers = {"X-CSRF-Token": self.csrf if csrf is None else csrf}
        content = raw if raw is not None else orjson.dumps(body if body is not None else {})
        return self.client.post(
            f"/console/api{path}",
            content=content,
            headers={**headers, "Content-Type": "application/json"},
        )

    def ok(self, path: str, body: object = None) -> dict[str, Any]:
        answer = self.post(path, body)
        assert answer.status_code == 200, answer.text
        data = answer.json()
        assert {k: data[k] for k in SUCCESS} == SUCCESS
        return dict(data)

    def snapshot(self) -> dict[str, Any]:
        answer = self.get("/snapshot")
        assert answer.status_code == 200, answer.text
        return dict(answer.json()["snapshot"])


def queue_rows(snapshot: dict[str, Any], name: str) -> list[Row]:
    fields = snapshot["fields"]
    return [dict(zip(fields, row, strict=True)) for row in snapshot[name]]


def read_events(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event name, data) of a server-sent event stream; comments are skipped."""
    name, data = "message", ""
    for line in lines:
        if line == "":
            if data:
                yield name, data
            name, data = "message", ""
        elif line.startswith(":"):
            continue
        elif line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data = line[len("data: ") :]
