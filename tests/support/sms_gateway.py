"""An SMS gateway stand-in for tests: a threading ``http.server`` on a local port that answers
as Twilio's Messages resource documents (``POST .../Accounts/{AccountSid}/Messages.json``, form
fields ``To``, ``From``, ``Body``, HTTP basic authentication with the account SID and auth
token): ``201 Created`` with the message resource in JSON; ``401`` (error 20003) when the
credentials are wrong; ``400`` when ``To`` is not an E.164 number (21211) or ``Body`` is
missing (21602). It also takes the JSON shape (``{"to", "from", "text"}``) on ``/json``.

Set ``fail_with`` to answer every request so (429, 500, 503 ...) until it is None again; set
``hang`` to never answer. Every request is kept in ``requests``; accepted messages in ``sent``.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

ACCOUNT_SID = "AC" + "0" * 32
AUTH_TOKEN = "f" * 32  # a test credential
E164 = re.compile(r"\+[1-9][0-9]{1,14}")
MORE_INFO = "https://www.twilio.com/docs/errors/"


@dataclass(frozen=True)
class Request:
    """One request the gateway took: path, headers (lower case), body, how it was answered."""

    path: str
    headers: dict[str, str]
    body: bytes
    status: int


@dataclass
class SmsGateway:
    """``start()``; ``twilio_url``, ``json_url``; ``requests``, ``sent``; ``stop()``."""

    fail_with: int | None = None
    hang: bool = False
    requests: list[Request] = field(default_factory=list)
    sent: list[dict[str, str]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def twilio_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json"

    @property
    def json_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/json"

    def start(self) -> SmsGateway:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                if gateway.hang:
                    gateway._release.wait()
                    return
                status, answer = gateway._answer(self.path, headers, body)
                with gateway._lock:
                    gateway.requests.append(Request(self.path, headers, body, status))
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._release.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _answer(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        if self.fail_with is not None:
            return self.fail_with, _error(self.fail_with, 20429, "Too Many Requests")
        expected = base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
        if headers.get("authorization") != f"Basic {expected}":
            return 401, _error(401, 20003, "Authenticate")
        if path == "/json":
            try:
                given = json.loads(body)
                to, sender, text = given["to"], given.get("from", ""), given["text"]
            except (ValueError, KeyError, TypeError):
                return 400, _error(400, 21602, "Message body is required.")
        elif path == f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json":
            if headers.get("content-type") != "application/x-www-form-urlencoded":
                return 400, _error(400, 21602, "Message body is required.")
            form = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
            to, sender, text = form.get("To", ""), form.get("From", ""), form.get("Body", "")
        else:
            return 404, _error(404, 20404, "The requested resource was not found")
        if not isinstance(to, str) or not E164.fullmatch(to):
            return 400, _error(400, 21211, f"Invalid 'To' Phone Number: {str(to)[:40]}")
        if not text:
            return 400, _error(400, 21602, "Message body is required.")
        message = {"to": to, "from": sender, "body": text}
        with self._lock:
            self.sent.append(message)
        sid = "SM" + secrets.token_hex(16)
        return 201, {"sid": sid, "account_sid": ACCOUNT_SID, "status": "queued", **message}


def _error(status: int, code: int, message: str) -> dict[str, Any]:
    """An error answer as Twilio gives it."""
    return {"code": code, "message": message, "more_info": f"{MORE_INFO}{code}", "status": status}
