"""File modes of the data directory: 0700 for the directory, 0600 for what alarmhub writes in it;
and the directory's name as messages show it.

Every alarmhub process runs with the umask 077, so whatever it creates is its user's alone; the
directory and the database files are also created with those modes explicitly.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

UMASK = 0o077
DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
OPEN_TO_OTHERS = 0o077  # any permission for group or others


def restrict_umask() -> None:
    """Make every file and directory this process (and its children) creates private."""
    os.umask(UMASK)


def shown(path: Path) -> str:
    """``path`` as a message shows it: absolute (a relative one is taken from the current
    directory, where a user who ran a command from the wrong folder sees it), symbolic links
    left as they were given."""
    return os.path.abspath(path)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def private_directory(path: Path) -> int | None:
    """Create ``path`` (and missing parents) mode 0700; for an existing directory open to
    group or others, its mode (left as it is: it may be a directory the station shares on
    purpose), else None."""
    try:
        path.mkdir(mode=DIRECTORY_MODE, parents=True)
    except FileExistsError:
        mode = mode_of(path)
        return mode if mode & OPEN_TO_OTHERS else None
    return None


def private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 when missing; an existing file of alarmhub's that is
    open to group or others (made by an older version) is brought to 0600."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        restrict(path)


def restrict(path: Path) -> None:
    """Take group's and others' permissions away from an existing file of alarmhub's."""
    try:
        if mode_of(path) & OPEN_TO_OTHERS:
            path.chmod(FILE_MODE)
    except OSError:
        pass  # gone meanwhile, or not ours to change: the database's own error says more
