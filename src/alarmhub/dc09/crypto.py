"""DC-09 encryption: AES-128/192/256 in CBC mode with a zero IV, the text in hexadecimal.

The encrypted part of a message starts with random padding that ends at the first ``|``; the
padding makes the text a whole number of 16-byte blocks.
"""

from __future__ import annotations

import secrets
import string

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from alarmhub.core.dc09 import KEY_SIZES

BLOCK = 16
_IV = bytes(BLOCK)
_PAD_CHARACTERS = (string.ascii_letters + string.digits).encode("ascii")
_HEX_DIGITS = frozenset(b"0123456789ABCDEFabcdef")


def decrypt(key: bytes, hex_text: bytes) -> bytes | None:
    """The plain text of hexadecimal cipher text; None when it is not whole blocks of hex (or
    the key is not an AES key)."""
    if (
        len(key) not in KEY_SIZES
        or not hex_text
        or len(hex_text) % (2 * BLOCK)
        or not _HEX_DIGITS.issuperset(hex_text)
    ):
        return None
    decryptor = Cipher(algorithms.AES(key), modes.CBC(_IV)).decryptor()
    return decryptor.update(bytes.fromhex(hex_text.decode("ascii"))) + decryptor.finalize()


def encrypt(key: bytes, text: bytes) -> bytes:
    """``text`` behind random padding and a ``|``, encrypted, as upper-case hexadecimal."""
    pad = BLOCK - (len(text) + 1) % BLOCK
    padding = bytes(secrets.choice(_PAD_CHARACTERS) for _ in range(pad))
    encryptor = Cipher(algorithms.AES(key), modes.CBC(_IV)).encryptor()
    cipher = encryptor.update(padding + b"|" + text) + encryptor.finalize()
    return cipher.hex().upper().encode("ascii")
