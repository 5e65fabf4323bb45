"""The station's secret key: it encrypts the API users' passwords at rest.

Kept in the data directory as ``secret.key`` (mode 0600, created on first use; a file open to
group or others is refused) or given by the environment (``ALARMHUB_SECRET_KEY``); several
nodes on one database share it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from alarmhub import files
from alarmhub.core.errors import SecretKeyError

FILE_NAME = "secret.key"
ENVIRONMENT = "ALARMHUB_SECRET_KEY"


def load(data_dir: Path) -> Fernet:
    """The station's key: from the environment, else the data directory's file (made if new)."""
    given = os.environ.get(ENVIRONMENT)
    if given:
        return _fernet(given.encode("ascii"), ENVIRONMENT)
    path = data_dir / FILE_NAME
    if not path.exists():
        files.private_directory(data_dir)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, files.FILE_MODE)
        except FileExistsError:
            pass  # another process made it first
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(Fernet.generate_key())
    with path.open("rb") as fh:
        mode = stat.S_IMODE(os.fstat(fh.fileno()).st_mode)
        if mode & files.OPEN_TO_OTHERS:
            raise SecretKeyError(
                f"{path} is open to group or others (mode {mode:04o}): "
                f"restrict it with chmod 600 {path}"
            )
        return _fernet(fh.read().strip(), str(path))


def _fernet(key: bytes, where: str) -> Fernet:
    try:
        return Fernet(key)
    except ValueError:
        raise SecretKeyError(f"{where}: not a valid key (32 url-safe base64 bytes)") from None


def encrypt(key: Fernet, secret: str) -> str:
    return key.encrypt(secret.encode("utf-8")).decode("ascii")


def decrypt(key: Fernet, token: str) -> str:
    try:
        return key.decrypt(token.encode("ascii")).decode("utf-8")
    except InvalidToken:
        raise SecretKeyError(
            "a stored password cannot be decrypted: the secret key is not the one it was "
            "encrypted with"
        ) from None
