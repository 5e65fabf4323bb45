"""Keys of the integrator API: their scopes, their form, and the accounts a key may see.

A key is ``ahk_`` and 43 URL-safe characters (32 random bytes); the station keeps only its
SHA-256, so a key is shown once. A key limited to an account-number prefix (a dealer's range)
sees and changes only the accounts whose number starts with it: anything else is answered as if
it did not exist (decisions section 10).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

SCOPES = ("accounts:read", "accounts:write", "alarms:read", "events:read", "test:write")
PREFIX = "ahk_"
KEY_PATTERN = re.compile(r"ahk_[A-Za-z0-9_-]{43}")
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ACCOUNTS_PATTERN = re.compile(r"[0-9A-Za-z]{0,9}")


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key as a request presents it: its name (for the audit trail), scopes and range."""

    name: str
    scopes: frozenset[str]
    accounts: str = ""  # an account-number prefix; empty: every account

    def may(self, scope: str) -> bool:
        """Whether the key has ``scope`` (``""``: what every key may do)."""
        return not scope or scope in self.scopes

    def sees(self, account_number: str) -> bool:
        """Whether the key may see (and, with a write scope, change) ``account_number``."""
        return account_number.startswith(self.accounts)


def new_key() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def key_hash(key: str) -> str:
    """What the station stores of a key: its SHA-256, hex (a key has 256 random bits, so a
    fast hash is enough; the lookup by hash compares no secret byte by byte)."""
    return hashlib.sha256(key.encode("ascii", "replace")).hexdigest()


def key_problem(name: str, scopes: tuple[str, ...], accounts: str) -> str | None:
    """Why a key cannot be made with these, or None."""
    if not NAME_PATTERN.fullmatch(name):
        return "the name must be 1-64 letters, digits, '.', '_' or '-', not starting with . _ -"
    if not scopes:
        return f"give at least one --scope ({', '.join(SCOPES)})"
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        return f"unknown scope {unknown[0]!r}: use {', '.join(SCOPES)}"
    if not ACCOUNTS_PATTERN.fullmatch(accounts):
        return "--accounts must be an account-number prefix of at most 9 letters or digits"
    return None
