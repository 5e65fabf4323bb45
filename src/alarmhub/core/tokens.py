"""Bearer tokens: how they are made, how they are kept (a hash), and what they grant."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field

TOKEN_BYTES = 32
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


def new_token() -> str:
    """A fresh opaque token with 256 bits of entropy, URL-safe."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """The only form in which a token is stored: SHA-256, hex (tokens carry 256 random bits)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def valid_name(name: str) -> bool:
    """Names of drivers and tokens: 1-64 letters, digits, ``_ . -``, starting alphanumeric."""
    return NAME_PATTERN.fullmatch(name) is not None and name.isascii()


PAIR_PART_MAX = 64
# U+0000-U+001F and U+007F: never part of a source or destination (decisions section 6)
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def split_pair(pair: str) -> tuple[str, str] | None:
    """``source:destination`` split at its last colon; None unless each side is 1-64
    characters with no control character."""
    source, sep, destination = pair.rpartition(":")
    if (
        not sep
        or not 0 < len(source) <= PAIR_PART_MAX
        or not 0 < len(destination) <= PAIR_PART_MAX
        or _CONTROL.search(pair) is not None
    ):
        return None
    return source, destination


@dataclass(frozen=True, slots=True)
class Grant:
    """What one token may do: queue to these drivers, heartbeat these pairs."""

    name: str
    drivers: frozenset[str] = field(default_factory=frozenset)
    pairs: frozenset[tuple[str, str]] = field(default_factory=frozenset)

    def may_queue(self, destination: str) -> bool:
        return destination in self.drivers

    def may_beat(self, source: str, destination: str) -> bool:
        return (source, destination) in self.pairs
