"""The console's automation outputs, shown in the Receivers view beside the receiver links: each
output's state as the node sending it last reported it and its queue (``store.outputs.
list_outputs``), failed outputs first.

- ``GET /console/api/outputs``: ``{"outputs": [{"name", "protocol", "transport", "address",
  "baud", "framing", "accounts", "state", "queued", "oldest_queued_s", "stale", "sent",
  "resent", "naks", "timeouts", "last_delivered_us", "held_by"}], "failed": N, "alarm_type":
  "OUTFL", "server_us"}``. ``state`` is ``up``, ``down``, ``failed`` or ``idle``; ``address``
  is the one in use (the first before a node reports); ``alarm_type`` is AUTOMATION OUTPUT
  FAILURE's TYPE (the page reads the outputs again when such alarms change in the queues). Any
  signed-in operator may read it (the Receivers button in the header counts the failed ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from alarmhub.clock import now_us
from alarmhub.console.plumbing import Plumbing
from alarmhub.console.receivers import failed_first
from alarmhub.console.supervising import Api
from alarmhub.core.alarm_types import AUTOMATION_OUTPUT_FAILURE
from alarmhub.core.outputs import FAILED
from alarmhub.store import outputs

if TYPE_CHECKING:
    from alarmhub.console.routes import Session

OUTPUT_FIELDS = (
    "name",
    "protocol",
    "transport",
    "address",
    "baud",
    "framing",
    "accounts",
    "state",
    "queued",
    "oldest_queued_s",
    "stale",
    "sent",
    "resent",
    "naks",
    "timeouts",
    "last_delivered_us",
    "held_by",
)
"""The fields of one output in the view (one place for the names the page reads)."""


def shown_outputs(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The outputs as the view shows them: the address in use (the first one until a node
    reports), failed outputs first, then by name."""
    shown = [
        {name: row[name] for name in OUTPUT_FIELDS}
        | {"address": row["address"] or row["addresses"][0]}
        for row in rows
    ]
    return failed_first(shown)


class OutputsPanel:
    """The automation outputs' endpoint, under ``/console/api``."""

    def __init__(self, console: Plumbing) -> None:
        self.console = console

    def routes(self, api: Api, prefix: str) -> list[BaseRoute]:
        return [Route(f"{prefix}/outputs", api(self.outputs, False), methods=["GET"])]

    async def outputs(self, request: Request, session: Session) -> dict[str, Any]:
        at_us = now_us()
        shown = shown_outputs(
            await self.console.read(lambda conn: outputs.list_outputs(conn, at_us))
        )
        failed = sum(1 for output in shown if output["state"] == FAILED)
        alarm_type = AUTOMATION_OUTPUT_FAILURE.type
        return {"outputs": shown, "failed": failed, "alarm_type": alarm_type, "server_us": at_us}
