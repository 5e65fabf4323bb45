"""``alarmhub plan``: the action plans of alarm TYPEs (decisions section 8), for every account,
one account or one zone of an account, and each TYPE's enhanced call verification."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from alarmhub.cli.output import (
    CommandError,
    data_dir_option,
    emit,
    json_option,
    open_store,
    provisioning_errors,
    table,
)
from alarmhub.core.plans import Step, StepKind

REQUIRED = "required "
STEP_HELP = (
    "A step, in order: [required ]KIND[:DETAIL]. Kinds: "
    + ", ".join(k.value for k in StepKind)
    + "; a dispatch names its agency (dispatch:police), an instruction its text "
    "(instruction:Check the gate code in notes), any other kind may carry a note."
)


def parse_step(spec: str) -> Step:
    """A step of the command line: ``required dispatch:police``, ``call-list``, ..."""
    text = spec.strip()
    required = text.lower().startswith(REQUIRED)
    if required:
        text = text[len(REQUIRED) :].strip()
    kind_text, _, detail = text.partition(":")
    try:
        kind = StepKind(kind_text.strip().lower())
    except ValueError:
        kinds = ", ".join(k.value for k in StepKind)
        raise CommandError(f"step {spec!r}: the kind is one of {kinds}") from None
    detail = detail.strip()
    if kind is StepKind.DISPATCH:
        return Step(kind, required, agency=detail.lower())
    return Step(kind, required, text=detail)


scope_options = [
    click.option("--account", default="", metavar="ACCOUNT", help="One account's plan."),
    click.option("--zone", default="", metavar="ZONE", help="One zone's (with --account)."),
]


def _scoped(func: Any) -> Any:
    for option in reversed(scope_options):
        func = option(func)
    return func


def _show(plan: dict[str, Any]) -> None:
    where = plan["account"] and f" account {plan['account']}" + (
        f" zone {plan['zone']}" if plan["zone"] else ""
    )
    ecv = "required" if plan["ecv"] else "not required"
    click.echo(f"{plan['type']}{where or ''}: the {plan['scope']} plan; ECV before dispatch {ecv}")
    rows = [
        {
            "position": s["position"],
            "step": s["title"],
            "required": "yes" if s["required"] else "",
            "note": s["text"] if s["kind"] != "instruction" else "",
        }
        for s in plan["steps"]
    ]
    columns = [("position", "#"), ("step", "STEP"), ("required", "REQUIRED"), ("note", "NOTE")]
    table(rows, columns, "no steps")


@click.group("plan")
def plan_group() -> None:
    """Action plans: the steps an operator follows for the alarms of a TYPE (BURG, FIRE...)."""


@plan_group.command("show")
@click.argument("alarm_type", metavar="TYPE")
@_scoped
@data_dir_option
@json_option
@provisioning_errors
def plan_show(
    alarm_type: str, account: str, zone: str, data_dir: Path | None, as_json: bool
) -> None:
    """Show the plan an alarm of TYPE follows (of ACCOUNT, of ZONE), and where it comes from:
    shipped, the station's, the account's or the zone's."""
    from alarmhub.store import plans

    plan = plans.show_plan(open_store(data_dir), alarm_type.upper(), account, zone)
    emit(as_json, plan, lambda: _show(plan))


@plan_group.command("set")
@click.argument("alarm_type", metavar="TYPE")
@click.option("--step", "steps", multiple=True, required=True, metavar="SPEC", help=STEP_HELP)
@_scoped
@data_dir_option
@json_option
@provisioning_errors
def plan_set(
    alarm_type: str,
    steps: tuple[str, ...],
    account: str,
    zone: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Set the plan of TYPE for every account, for ACCOUNT, or for ZONE of ACCOUNT.

    \b
    Example: alarmhub plan set BURG --account 700042 \\
        --step premises --step "required call-list" \\
        --step "dispatch:police" --step "instruction:Gate code is in the notes"
    """
    from alarmhub.store import plans

    parsed = [parse_step(spec) for spec in steps]
    plan = plans.set_plan(open_store(data_dir), alarm_type.upper(), parsed, account, zone)
    emit(as_json, plan, lambda: _show(plan))


@plan_group.command("reset")
@click.argument("alarm_type", metavar="TYPE")
@_scoped
@data_dir_option
@json_option
@provisioning_errors
def plan_reset(
    alarm_type: str, account: str, zone: str, data_dir: Path | None, as_json: bool
) -> None:
    """Drop the station's plan of TYPE there: the wider plan applies again."""
    from alarmhub.store import plans

    engine = open_store(data_dir)
    plans.reset_plan(engine, alarm_type.upper(), account, zone)
    plan = plans.show_plan(engine, alarm_type.upper(), account, zone)
    emit(as_json, plan, lambda: _show(plan))


@plan_group.command("ecv")
@click.argument("alarm_type", metavar="TYPE")
@click.argument("setting", type=click.Choice(["on", "off", "default"]))
@data_dir_option
@json_option
@provisioning_errors
def plan_ecv(alarm_type: str, setting: str, data_dir: Path | None, as_json: bool) -> None:
    """Require enhanced call verification (two calls to two different numbers) before a
    dispatch for alarms of TYPE (on), exempt it (off), or use the shipped rule (default: every
    TYPE but FIRE, MED, PERS, PANIC, DURES, CO and GAS)."""
    from alarmhub.store import plans

    engine = open_store(data_dir)
    plans.set_ecv(engine, alarm_type.upper(), {"on": True, "off": False}.get(setting))
    plan = plans.show_plan(engine, alarm_type.upper())
    emit(as_json, plan, lambda: _show(plan))
