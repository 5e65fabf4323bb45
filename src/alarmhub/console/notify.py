"""The console's notifications (decisions sections 8 and 13): the plan step ``notify`` done from
the alarm screen by messaging contacts of the alarm's account, the messages about an alarm, and
the failed messages with their resend (``store.notify_operator``, ``store.notification_sending``).

- ``GET /console/api/alarms/{id}/notify``: ``{"choices": {"kind", "channels", "contacts": [{"id",
  "name", "email", "mobile", "subscribed", "on_call_list", "channels", "chosen"}]}, "messages":
  [message]}``: whom the step may message (``chosen`` and ``channels``: the default) and the
  messages about the alarm, newest first. Any signed-in operator may read it.
- ``POST /console/api/alarms/{id}/notify`` ``{"position": N, "recipients": [{"contact": ID,
  "channels": ["email", "sms"]}]}``: queues the messages and records step N done, with whom and
  by what channel as its note, in one transaction; only by the operator holding the alarm (as
  every step). ``{"note", "messages"}``.
- ``GET /console/api/notifications/failed``: ``{"messages": [message], "failed": N,
  "server_us"}`` (the header's Messages button counts them).
- ``POST /console/api/notifications/{id}/resend``: the failed (or sent) message queued again,
  from its first attempt; any signed-in operator. ``{"failed": N}``.

A message is ``{"id", "contact_id", "name", "kind", "channel", "to", "state", "attempts",
"last_error", "queued_us", "sent_us", "account", "subject"}``.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from alarmhub.clock import now_us
from alarmhub.console import inputs
from alarmhub.console.plumbing import Body, Plumbing
from alarmhub.console.supervising import Api
from alarmhub.core import operations as ops
from alarmhub.core.errors import ActionRefused, BadInput, ProvisioningError
from alarmhub.store import notification_sending, notify_operator, queries

if TYPE_CHECKING:
    from alarmhub.console.routes import Session

NOTIFY_FIELDS = {"position": int, "recipients": list}


def recipients(given: list[Any]) -> list[tuple[int, list[str]]]:
    """The recipients of a notify step as the body gives them: ``{"contact": ID, "channels":
    [...]}`` each."""
    found = []
    for item in given:
        if not isinstance(item, dict) or set(item) - {"contact", "channels"}:
            raise BadInput('each recipient is {"contact": ID, "channels": ["email", "sms"]}')
        contact, channels = item.get("contact"), item.get("channels")
        if not isinstance(contact, int) or isinstance(contact, bool) or not 0 < contact < 2**63:
            raise BadInput("a recipient's contact is a contact id (a positive whole number)")
        if not isinstance(channels, list) or not all(isinstance(c, str) for c in channels):
            raise BadInput("a recipient's channels are an array of strings")
        found.append((contact, channels))
    return found


def message_id(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 19 or int(text) <= 0:
        raise BadInput(f"message id must be a positive whole number, not {text[:20]!r}")
    return int(text)


class NotifyPanel:
    """The notify step, an alarm's messages, the failed messages, under ``/console/api``."""

    def __init__(self, console: Plumbing, body: Body, zone: tzinfo) -> None:
        self.console = console
        self.body = body
        self.zone = zone

    def routes(self, api: Api, prefix: str) -> list[BaseRoute]:
        return [
            Route(f"{prefix}/alarms/{{alarm_id}}/notify", api(self.alarm_messages, False),
                  methods=["GET"]),
            Route(f"{prefix}/alarms/{{alarm_id}}/notify", api(self.notify, True),
                  methods=["POST"]),
            Route(f"{prefix}/notifications/failed", api(self.failed, False), methods=["GET"]),
            Route(f"{prefix}/notifications/{{message_id}}/resend", api(self.resend, True),
                  methods=["POST"]),
        ]  # fmt: skip

    async def alarm_messages(self, request: Request, session: Session) -> dict[str, Any]:
        alarm_id = inputs.alarm_id(request.path_params["alarm_id"])

        def read(conn: Connection) -> dict[str, Any]:
            row = queries.alarm(conn, alarm_id)
            if row is None:
                raise ops.not_found(alarm_id)
            return {
                "choices": notify_operator.choices(conn, row),
                "messages": notify_operator.for_alarm(
                    conn, row["account_number"], alarm_id, self.zone
                ),
            }

        return await self.console.read(read)

    async def notify(self, request: Request, session: Session) -> dict[str, Any]:
        alarm_id = inputs.alarm_id(request.path_params["alarm_id"])
        fields = await self.body(request, NOTIFY_FIELDS)
        position = inputs.required(fields, "position")
        chosen = recipients(inputs.required(fields, "recipients"))
        zone = self.zone

        def work(conn: Connection) -> dict[str, Any]:
            note = notify_operator.notify(conn, session.code, alarm_id, position, chosen, now_us())
            row = queries.alarm(conn, alarm_id)
            assert row is not None
            messages = notify_operator.for_alarm(conn, row["account_number"], alarm_id, zone)
            return {"note": note, "messages": messages}

        return await self.console.write(work)

    async def failed(self, request: Request, session: Session) -> dict[str, Any]:
        zone = self.zone
        messages, count = await self.console.read(
            lambda conn: notify_operator.failed(conn, station=zone)
        )
        return {"messages": messages, "failed": count, "server_us": now_us()}

    async def resend(self, request: Request, session: Session) -> dict[str, Any]:
        wanted = message_id(request.path_params["message_id"])
        await self.body(request, {})

        def work(conn: Connection) -> int:
            try:
                notification_sending.resend(conn, wanted, now_us())
            except ProvisioningError as exc:
                status = 404 if str(exc).startswith("no message") else 409
                raise ActionRefused("OPS-MESSAGE", str(exc), status) from None
            return notify_operator.failed_count(conn)

        return {"failed": await self.console.write(work)}
