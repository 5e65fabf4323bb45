"""The command line: ``alarmhub serve`` and the provisioning and integrator commands.

Thin by design: every command calls the same store and client functions as the HTTP layers.
Each area's commands live in a module of their own, imported when one of its commands is
named, and a command imports the database, web or crypto libraries it needs when it runs: so
``alarmhub send`` starts fast.
"""

from __future__ import annotations

import importlib

import click
from click.exceptions import NoSuchCommand

from alarmhub import __version__, files

COMMANDS = {
    "serve": "serve:serve",
    "demo": "serve:demo_group",
    "db": "serve:db",
    "driver": "provisioning:driver",
    "token": "provisioning:token",
    "dnis": "provisioning:dnis_group",
    "account": "provisioning:account",
    "apiuser": "provisioning:apiuser",
    "zone": "response:zone_group",
    "user": "response:user_group",
    "agency": "response:agency_group",
    "contact": "contacts:contact_group",
    "operator": "operators:operator_group",
    "resolution": "operators:resolution",
    "alarmtype": "operators:alarmtype",
    "plan": "plans:plan_group",
    "pending": "queues:pending",
    "in-process": "queues:in_process",
    "history": "queues:history",
    "signal": "queues:signal",
    "send": "integrator:send",
    "heartbeat": "integrator:heartbeat",
    "query": "integrator:query",
    "dc09": "dc09:dc09_group",
    "receiver": "receivers:receiver_group",
    "output": "outputs:output_group",
    "storm": "storm:storm_group",
    "test": "on_test:test_group",
    "report": "reports:report_group",
    "schedule": "schedules:schedule_group",
    "holiday": "holidays:holiday_group",
    "apikey": "api_keys:apikey_group",
    "webhook": "webhooks:webhook_group",
    "notify": "notify:notify_group",
}
"""Each command of ``alarmhub``: the module of this package that holds it, and its name there."""


class Areas(click.Group):
    """The ``alarmhub`` group: a command's module is imported when the command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return None
        module, name = where.split(":")
        command = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except NoSuchCommand as exc:  # suggest the commands not imported yet, as click would
            raise NoSuchCommand(exc.command_name, possibilities=COMMANDS, ctx=ctx) from None


@click.group(cls=Areas, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="alarmhub")
def main() -> None:
    """alarmhub: alarm signaling and monitoring for central stations."""
    files.restrict_umask()
