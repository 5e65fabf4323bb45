"""DC-09 encryption: AES-128/192/256 in CBC mode with a zero IV, the text in hexadecimal.

The encrypted part of a message starts with random padding that ends at the first ``|``; the
padding makes the text a whole number of 16-byte blocks. The CBC chaining is done here, over
AES applied to single blocks (which keeps no state from one call to the next), so that each
key's AES (its key schedule) is made once and kept, not once a message. Not thread-safe: the
receiver uses it on its event loop only.
"""

from __future__ import annotations

import binascii
import os
import string
from functools import lru_cache

from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes

from alarmhub.core.dc09 import KEY_SIZES

BLOCK = 16
KEYS_KEPT = 4096  # keys whose AES is kept made (the accounts that report most recently)
_PAD_CHARACTERS = (string.ascii_letters + string.digits).encode("ascii")
# random bytes to padding characters, evenly: the bytes past the last whole cycle are dropped
_PAD_TABLE = bytes(_PAD_CHARACTERS[b % len(_PAD_CHARACTERS)] for b in range(256))
_PAD_UNEVEN = bytes(range(256 - 256 % len(_PAD_CHARACTERS), 256))


@lru_cache(maxsize=KEYS_KEPT)
def _aes(key: bytes) -> tuple[CipherContext, CipherContext]:
    """AES under ``key`` on whole blocks, each on its own: (encrypt, decrypt)."""
    # ECB is the block cipher itself here; the chaining (CBC) is done around it
    cipher = Cipher(algorithms.AES(key), modes.ECB())  # noqa: S305
    return cipher.encryptor(), cipher.decryptor()


def decrypt(key: bytes, hex_text: bytes) -> bytes | None:
    """The plain text of hexadecimal cipher text; None when it is not whole blocks of hex (or
    the key is not an AES key)."""
    if len(key) not in KEY_SIZES or not hex_text or len(hex_text) % (2 * BLOCK):
        return None
    try:
        cipher = binascii.unhexlify(hex_text)
    except binascii.Error:  # not hexadecimal
        return None
    # each plain block is its cipher block decrypted, xor the cipher block before it (the IV,
    # zero, before the first)
    blocks = _aes(key)[1].update(cipher)
    chained = int.from_bytes(blocks, "big") ^ int.from_bytes(cipher[:-BLOCK], "big")
    return chained.to_bytes(len(cipher), "big")


def padding(size: int) -> bytes:
    """``size`` random letters and digits."""
    pad = b""
    while len(pad) < size:  # almost always once
        pad += os.urandom(size - len(pad) + 8).translate(_PAD_TABLE, _PAD_UNEVEN)
    return pad[:size]


def encrypt(key: bytes, text: bytes) -> bytes:
    """``text`` behind random padding and a ``|``, encrypted, as upper-case hexadecimal."""
    plain = padding(BLOCK - (len(text) + 1) % BLOCK) + b"|" + text
    encryptor = _aes(key)[0]
    previous = 0  # the IV
    out = []
    for start in range(0, len(plain), BLOCK):
        block = int.from_bytes(plain[start : start + BLOCK], "big") ^ previous
        cipher = encryptor.update(block.to_bytes(BLOCK, "big"))
        previous = int.from_bytes(cipher, "big")
        out.append(cipher)
    return binascii.hexlify(b"".join(out)).upper()
