"""``alarmhub.core.tokens``: token making and hashing, names, pairs and grants."""

from __future__ import annotations

import hashlib
import re
import string

import pytest

from alarmhub.core.tokens import Grant, new_token, split_pair, token_hash, valid_name

URLSAFE = set(string.ascii_letters + string.digits + "-_")


@pytest.mark.parametrize(
    ("pair", "split"),
    [
        ("site1:rx1", ("site1", "rx1")),
        ("a:b:rx1", ("a:b", "rx1")),  # split at the LAST colon
        ("site1:rx2:rx1", ("site1:rx2", "rx1")),
        ("a::b", ("a:", "b")),
        ("s" * 64 + ":d", ("s" * 64, "d")),
    ],
)
def test_split_pair(pair: str, split: tuple[str, str]) -> None:
    assert split_pair(pair) == split


@pytest.mark.parametrize(
    "pair",
    [
        "", ":", "site1", ":rx1", "site1:", "a:b:", "s" * 65 + ":d", "s:" + "d" * 65,
        "site\x001:rx1", "site1:rx1\x00", "a\nb:rx1", "a\x1fb:rx1", "a\x7fb:rx1", "a:b\tc",
    ],
)  # fmt: skip
def test_split_pair_refuses(pair: str) -> None:
    assert split_pair(pair) is None


def test_grant_may_queue_only_its_drivers() -> None:
    grant = Grant("t", drivers=frozenset({"rx1", "rx3"}))
    assert grant.may_queue("rx1")
    assert grant.may_queue("rx3")
    assert not grant.may_queue("rx2")
    assert not grant.may_queue("RX1")
    assert not grant.may_beat("site1", "rx1")


def test_grant_may_beat_only_its_pairs() -> None:
    grant = Grant("t", pairs=frozenset({("site1", "rx1")}))
    assert grant.may_beat("site1", "rx1")
    assert not grant.may_beat("site2", "rx1")
    assert not grant.may_beat("site1", "rx2")
    assert not grant.may_beat("rx1", "site1")
    assert not grant.may_queue("rx1")


def test_empty_grant_allows_nothing() -> None:
    grant = Grant("t")
    assert not grant.may_queue("rx1")
    assert not grant.may_beat("site1", "rx1")


def test_token_hash_is_hex_sha256() -> None:
    digest = token_hash("abc")
    assert digest == hashlib.sha256(b"abc").hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert token_hash("abd") != digest


def test_new_token_has_enough_entropy_and_is_urlsafe() -> None:
    made = [new_token() for _ in range(50)]
    for token in made:
        assert len(token) >= 43  # 32 bytes of entropy, URL-safe base64 without padding
        assert set(token) <= URLSAFE
    assert len(set(made)) == len(made)


@pytest.mark.parametrize("name", ["rx1", "a", "Central-1.main_2", "x" * 64, "0abc"])
def test_valid_names(name: str) -> None:
    assert valid_name(name)


@pytest.mark.parametrize("name", ["", "-rx", ".rx", "_rx", "rx 1", "rx:1", "x" * 65, "rxé", "rx/1"])
def test_invalid_names(name: str) -> None:
    assert not valid_name(name)
