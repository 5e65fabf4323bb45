"""The digest of the query interface's five headers: the published ``sha1`` scheme and the
``hmac-sha256`` scheme that also signs the form fields (decisions section 3).

Pure functions; the server and the integrators' client compute digests with the same code.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from urllib.parse import quote

SHA1 = "sha1"
HMAC_SHA256 = "hmac-sha256"
SCHEMES = (SHA1, HMAC_SHA256)
DATE_FORMAT = "%d%m%Y%H%M%S"
DATE_WINDOW_S = 300
NONCE_PATTERN = re.compile(r"[A-Za-z0-9]{16,64}")
HEX40 = re.compile(r"[0-9a-f]{40}")
HEX64 = re.compile(r"[0-9a-f]{64}")
APPKEY_MAX = 64


def form_string(fields: Iterable[tuple[str, str]]) -> str:
    """Every form field as ``name=value``, names sorted, both percent-encoded (RFC 3986,
    unreserved characters kept), joined by ``&``."""
    pairs = sorted((quote(name, safe="-._~"), quote(value, safe="-._~")) for name, value in fields)
    return "&".join(f"{name}={value}" for name, value in pairs)


def sha1_digest(appkey: str, username: str, date: str, nonce: str, password: str) -> str:
    """``hex(SHA1(APPKEY + USERNAME + DATE + NONCE + PASSWORD + "\\n"))``."""
    text = f"{appkey}{username}{date}{nonce}{password}\n"
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def hmac_digest(
    appkey: str,
    username: str,
    date: str,
    nonce: str,
    password: str,
    fields: Iterable[tuple[str, str]],
) -> str:
    """``hex(HMAC_SHA256(key=PASSWORD, msg=APPKEY\\nUSERNAME\\nDATE\\nNONCE\\nFORM))``."""
    message = "\n".join((appkey, username, date, nonce, form_string(fields)))
    return hmac.new(password.encode("utf-8"), message.encode("utf-8"), hashlib.sha256).hexdigest()


def scheme_of(digest: str) -> str | None:
    """Which scheme a digest uses, told apart by its length; None when it is neither."""
    if HEX40.fullmatch(digest):
        return SHA1
    if HEX64.fullmatch(digest):
        return HMAC_SHA256
    return None


def date_header(moment: datetime | None = None) -> str:
    """``X-SVC-DATE`` for ``moment`` (default now): UTC as ``DDMMYYYYHHMISS``."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime(DATE_FORMAT)


@lru_cache(maxsize=1024)
def parse_date(value: str) -> datetime | None:
    """The UTC moment of an ``X-SVC-DATE`` value, or None when it is malformed (remembered:
    the requests of one second carry the same value, and ``strptime`` is slow)."""
    if len(value) != 14 or not value.isdigit():
        return None
    try:
        return datetime.strptime(value, DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def matches(expected: str, presented: str) -> bool:
    """Constant-time comparison of two digests."""
    return hmac.compare_digest(expected.encode("ascii"), presented.encode("ascii", "replace"))
