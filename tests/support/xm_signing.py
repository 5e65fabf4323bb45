"""Signing requests of the monitoring query interface as an integrator would: the published
sha1 recipe written out here rather than taken from alarmhub, hmac-sha256, the five X-SVC
headers, and where requests go."""

from __future__ import annotations

import hashlib
import secrets
import string
from collections.abc import Mapping

from alarmhub.xm import digest

PATH = "/rest/rest.php"
PARAMS = {"dataSource": "methods", "*view": "xmsubmit"}
HEADER_NAMES = ("X-SVC-APPKEY", "X-SVC-USERNAME", "X-SVC-DATE", "X-SVC-NONCE", "X-SVC-DIGEST")
APPKEY = "ourclient"


def new_nonce() -> str:
    """20 random letters, as decisions §3 recommends."""
    return "".join(secrets.choice(string.ascii_letters) for _ in range(20))


def svc_headers(appkey: str, username: str, date: str, nonce: str, signed: str) -> dict[str, str]:
    values = (appkey, username, date, nonce, signed)
    return {**dict(zip(HEADER_NAMES, values, strict=True)), "Accept": "application/json"}


def published_sha1(appkey: str, username: str, date: str, nonce: str, password: str) -> str:
    """The published recipe."""
    text = appkey + username + date + nonce + password + "\n"
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def sha1_headers(
    username: str, password: str, *, date: str | None = None, nonce: str | None = None
) -> dict[str, str]:
    """The headers of a request signed by the published sha1 recipe."""
    date = date or digest.date_header()
    nonce = nonce or new_nonce()
    signed = published_sha1(APPKEY, username, date, nonce, password)
    return svc_headers(APPKEY, username, date, nonce, signed)


def hmac_headers(
    form: Mapping[str, str], username: str, password: str, *, nonce: str | None = None
) -> dict[str, str]:
    """The headers of a request signed by hmac-sha256 over its form."""
    date = digest.date_header()
    nonce = nonce or new_nonce()
    signed = digest.hmac_digest(APPKEY, username, date, nonce, password, form.items())
    return svc_headers(APPKEY, username, date, nonce, signed)
