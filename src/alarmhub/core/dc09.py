"""Facts of the DC-09 receiver that the store and the router share with it: the destination its
signals arrive under, how a receiver line is named, the name its retry keys are remembered
under, and what makes an AES key."""

from __future__ import annotations

DESTINATION = "dc09"
TOKEN_NAME = "(dc09)"  # noqa: S105 (a name, not a secret) no token can have this name: retry keys never meet Idempotency-Keys
KEY_SIZES = (16, 24, 32)


def line_name(receiver: int | str, line: int | str) -> str:
    """A receiver line as operators read it, and the ``source`` of its signals: ``R1L2``."""
    return f"R{receiver}L{line}"


def key_problem(key_hex: str) -> str | None:
    """Why ``key_hex`` cannot be an AES key, or None when it can."""
    if not key_hex or any(c not in "0123456789abcdefABCDEF" for c in key_hex):
        return "the key must be hexadecimal"
    if len(key_hex) // 2 not in KEY_SIZES or len(key_hex) % 2:
        return "the key must be 32, 48 or 64 hex digits (AES-128, AES-192, AES-256)"
    return None
