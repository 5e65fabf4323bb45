"""Line masking: a dnis's mask and a panel identifier give the subscriber account number."""

from __future__ import annotations

from functools import lru_cache

ACCOUNT_MAX = 9
PANEL_POSITION = "#"


def mask_problem(mask: str) -> str | None:
    """Why ``mask`` cannot be a line mask, or None when it can."""
    if not mask:
        return "mask must not be empty"
    if len(mask) > ACCOUNT_MAX:
        return f"mask must be at most {ACCOUNT_MAX} characters"
    if not mask.isascii() or not mask.isprintable() or " " in mask:
        return "mask must be printable ASCII without spaces"
    first = mask.find(PANEL_POSITION)
    if first >= 0:
        run = len(mask) - len(mask[first:].lstrip(PANEL_POSITION)) - first
        if PANEL_POSITION in mask[first + run :]:
            return "the panel positions (#) of a mask must be one run"
    return None


@lru_cache(maxsize=1 << 16)  # routing asks it of every signal: a station's panels repeat
def apply_mask(mask: str, panel: str) -> str | None:
    """The account number for ``panel`` on a line with ``mask``; None when the panel does not fit.

    Each ``#`` is a panel position: the panel is right-aligned into the run of ``#`` and
    left-padded with ``0``. A mask without ``#`` is a prefix put before the panel.
    """
    first = mask.find(PANEL_POSITION)
    if first < 0:
        account = mask + panel
    else:
        run = mask.count(PANEL_POSITION)
        if len(panel) > run:
            return None
        account = mask[:first] + panel.rjust(run, "0") + mask[first + run :]
    return account if len(account) <= ACCOUNT_MAX else None
