"""The command line: ``alarmhub serve`` and the provisioning and integrator commands.

Thin by design: every command calls the same store and client functions as the HTTP layers.
Each area's commands live in a module of their own; a command imports the database, web or
crypto libraries it needs when it runs, so that ``alarmhub send`` starts fast.
"""

from __future__ import annotations

import click

from alarmhub import __version__, files
from alarmhub.cli import dc09, integrator, operators, provisioning, queues, serve


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="alarmhub")
def main() -> None:
    """alarmhub: alarm signaling and monitoring for central stations."""
    files.restrict_umask()


for command in (
    serve.serve,
    serve.demo_group,
    serve.db,
    provisioning.driver,
    provisioning.token,
    provisioning.dnis_group,
    provisioning.account,
    provisioning.apiuser,
    operators.operator_group,
    operators.resolution,
    operators.alarmtype,
    queues.pending,
    queues.in_process,
    queues.history,
    queues.signal,
    integrator.send,
    integrator.heartbeat,
    integrator.query,
    dc09.dc09_group,
):
    main.add_command(command)
