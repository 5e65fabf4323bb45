"""Digest schemes of the query interface: the published example and the hmac-sha256 recipe."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

from alarmhub.xm.digest import (
    HMAC_SHA256,
    SHA1,
    date_header,
    form_string,
    hmac_digest,
    matches,
    parse_date,
    scheme_of,
    sha1_digest,
)


def test_published_sha1_example() -> None:
    digest = sha1_digest(
        "ourclient", "documentation", "03012024090823", "nE3MSLaXYb23rp7DTDch", "secretpassword"
    )
    assert digest == "1a0c0a42e5adb089ef2a8707029aad2450fbf83b"
    assert scheme_of(digest) == SHA1


def test_form_string_sorts_and_percent_encodes() -> None:
    fields = [("*setMethod", "XMHIST"), ("ACCOUNT", "D 1/x"), ("HOURS", "")]
    assert form_string(fields) == "%2AsetMethod=XMHIST&ACCOUNT=D%201%2Fx&HOURS="
    assert form_string([("a", "~-._")]) == "a=~-._"


def test_hmac_sha256_recipe() -> None:
    fields = [("*setMethod", "XMAPEND"), ("SOURCE", "DATAENTRY")]
    digest = hmac_digest("app", "user", "03012024090823", "n" * 20, "pw", fields)
    message = "app\nuser\n03012024090823\n" + "n" * 20 + "\n%2AsetMethod=XMAPEND&SOURCE=DATAENTRY"
    assert digest == hmac.new(b"pw", message.encode(), hashlib.sha256).hexdigest()
    assert scheme_of(digest) == HMAC_SHA256
    other = hmac_digest("app", "user", "03012024090823", "n" * 20, "pw", [("SOURCE", "X")])
    assert other != digest


def test_scheme_of_rejects_other_shapes() -> None:
    assert scheme_of("") is None
    assert scheme_of("A" * 40) is None  # upper-case hex is not the published form
    assert scheme_of("a" * 41) is None


def test_dates() -> None:
    moment = datetime(2024, 1, 3, 9, 8, 23, tzinfo=UTC)
    assert date_header(moment) == "03012024090823"
    assert parse_date("03012024090823") == moment
    assert parse_date("32012024090823") is None
    assert parse_date("0301202409082") is None
    assert parse_date("0301202409082x") is None


def test_matches_is_exact() -> None:
    assert matches("ab" * 20, "ab" * 20)
    assert not matches("ab" * 20, "ab" * 19 + "ac")
    assert not matches("ab" * 20, "é" * 40)
