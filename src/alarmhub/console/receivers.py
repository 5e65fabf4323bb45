"""The console's Receivers panel: every receiver link, its state and counts as the node holding
it last reported them (``store.receivers.link_states``), failed links first.

- ``GET /console/api/receivers``: ``{"links": [{"name", "protocol", "transport", "address",
  "baud", "framing", "state", "held_by", "last_seen_us", "last_frame", "per_minute", "frames",
  "acks", "naks", "unreadable", "lines"}], "failed": N, "alarm_type": "RXFL", "server_us"}``.
  ``state`` is ``up``, ``failed`` or ``idle``; ``last_frame`` is the frame's text with its
  control bytes escaped; ``alarm_type`` is RECEIVER LINK FAILURE's TYPE (the page reads the
  panel again when such alarms change in the queues). Any signed-in operator may read it (the
  view's button in the header counts the failed links).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from alarmhub.clock import now_us
from alarmhub.console.plumbing import Plumbing
from alarmhub.console.supervising import Api
from alarmhub.core.alarm_types import RECEIVER_LINK_FAILURE
from alarmhub.core.receiver_links import FAILED
from alarmhub.store import receivers

if TYPE_CHECKING:
    from alarmhub.console.routes import Session

LINK_FIELDS = (
    "name",
    "protocol",
    "transport",
    "address",
    "baud",
    "framing",
    "state",
    "held_by",
    "last_seen_us",
    "last_frame",
    "per_minute",
    "frames",
    "acks",
    "naks",
    "unreadable",
    "lines",
)
"""The fields of one link in the panel (one place for the names the page reads)."""


def links(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The links as the panel shows them, each in its state as its node last reported it:
    failed links first, then by name."""
    return failed_first([{name: row[name] for name in LINK_FIELDS} for row in rows])


def failed_first(shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Links or outputs as the view lists them: the failed first, then by name."""
    return sorted(shown, key=lambda row: (row["state"] != FAILED, str(row["name"])))


class ReceiversPanel:
    """The Receivers panel's endpoint, under ``/console/api``."""

    def __init__(self, console: Plumbing) -> None:
        self.console = console

    def routes(self, api: Api, prefix: str) -> list[BaseRoute]:
        return [Route(f"{prefix}/receivers", api(self.receivers, False), methods=["GET"])]

    async def receivers(self, request: Request, session: Session) -> dict[str, Any]:
        shown = links(await self.console.read(receivers.link_states))
        failed = sum(1 for link in shown if link["state"] == FAILED)
        alarm_type = RECEIVER_LINK_FAILURE.type
        return {"links": shown, "failed": failed, "alarm_type": alarm_type, "server_us": now_us()}
