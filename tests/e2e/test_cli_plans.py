"""``alarmhub plan show|set|reset|ecv`` and ``account set --phone`` on both databases: the
shipped plans, the station's for every account, one account and one zone, refusals with their
reasons, and enhanced call verification per TYPE (decisions section 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import as_dict, cli, cli_json

pytestmark = pytest.mark.backends("sqlite", "postgresql")
ACCOUNT = "700042"


@pytest.fixture
def data_dir(backend: str, tmp_path: Path) -> Path:
    cli(tmp_path, "account", "add", ACCOUNT, "--name", "DEMO Oak School")
    return tmp_path


def kinds(plan: dict[str, object]) -> list[tuple[str, str, bool]]:
    steps = plan["steps"]
    assert isinstance(steps, list)
    return [(s["kind"], s["agency"], s["required"]) for s in steps]


def test_the_shipped_plan_of_a_burglary(data_dir: Path) -> None:
    plan = as_dict(cli_json(data_dir, "plan", "show", "burg"))
    assert (plan["type"], plan["scope"], plan["ecv"]) == ("BURG", "shipped", True)
    assert kinds(plan) == [
        ("premises", "", False),
        ("call-list", "", True),
        ("dispatch", "police", False),
        ("notify", "", False),
    ]
    human = cli(data_dir, "plan", "show", "FIRE").stdout
    assert "FIRE: the shipped plan; ECV before dispatch not required" in human
    assert "dispatch fire" in human


def test_the_narrowest_plan_wins_and_reset_widens_it_again(data_dir: Path) -> None:
    cli(data_dir, "plan", "set", "BURG", "--step", "required call-list")
    cli(data_dir, "plan", "set", "BURG", "--account", ACCOUNT, "--step", "video")
    zone = as_dict(
        cli_json(
            data_dir, "plan", "set", "BURG", "--account", ACCOUNT, "--zone", "15",
            "--step", "premises", "--step", "required dispatch:police",
            "--step", "instruction:Gate code is in the notes",
        )
    )  # fmt: skip
    assert (zone["scope"], zone["zone"]) == ("zone", "015")
    assert zone["steps"][2]["title"] == "Gate code is in the notes"
    shown = as_dict(
        cli_json(data_dir, "plan", "show", "BURG", "--account", ACCOUNT, "--zone", "16")
    )
    assert (shown["scope"], kinds(shown)) == ("account", [("video", "", False)])
    cli(data_dir, "account", "add", "700043", "--name", "DEMO Elm Shop")
    other = as_dict(cli_json(data_dir, "plan", "show", "BURG", "--account", "700043"))
    assert other["scope"] == "station"  # an account without a plan of its own
    cli(data_dir, "plan", "reset", "BURG", "--account", ACCOUNT, "--zone", "15")
    widened = as_dict(
        cli_json(data_dir, "plan", "show", "BURG", "--account", ACCOUNT, "--zone", "15")
    )
    assert widened["scope"] == "account"
    cli(data_dir, "plan", "reset", "BURG", "--account", ACCOUNT)
    cli(data_dir, "plan", "reset", "BURG")
    assert as_dict(cli_json(data_dir, "plan", "show", "BURG"))["scope"] == "shipped"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--step", "dispatch"), "step 1: a dispatch step names its agency"),
        (("--step", "call-list", "--step", "dispatch:navy"), "step 2: a dispatch step names"),
        (("--step", "coffee"), "the kind is one of premises, call-list"),
        (("--step", "instruction"), "an instruction step says what to do"),
        (("--step", "call-list:police"), ""),  # a note on a call-list step is fine
        (("--zone", "15", "--step", "video"), "a zone's plan is one account's"),
        (("--account", "404", "--step", "video"), "no account '404'"),
        (("--account", ACCOUNT, "--zone", "1000", "--step", "video"), "zone must be a number"),
    ],
)
def test_a_plan_that_cannot_be_followed_is_refused_with_its_reason(
    data_dir: Path, args: tuple[str, ...], message: str
) -> None:
    result = cli(data_dir, "plan", "set", "BURG", *args, check=False)
    if not message:
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 1
    assert message in result.stderr
    assert as_dict(cli_json(data_dir, "plan", "show", "BURG"))["scope"] == "shipped"


def test_a_type_of_an_invalid_name_and_a_reset_of_nothing_are_refused(data_dir: Path) -> None:
    bad = cli(data_dir, "plan", "show", "BURGLARY", check=False)
    assert bad.returncode == 1 and "TYPE is 1-5 upper-case letters" in bad.stderr
    nothing = cli(data_dir, "plan", "reset", "FIRE", check=False)
    assert nothing.returncode == 1 and "FIRE has no plan of its own there" in nothing.stderr


def test_enhanced_call_verification_is_set_per_type(data_dir: Path) -> None:
    assert as_dict(cli_json(data_dir, "plan", "ecv", "FIRE", "on"))["ecv"] is True
    assert as_dict(cli_json(data_dir, "plan", "ecv", "BURG", "off"))["ecv"] is False
    back = as_dict(cli_json(data_dir, "plan", "ecv", "BURG", "default"))
    assert (back["ecv"], back["ecv_set_by_station"]) == (True, False)
    assert as_dict(cli_json(data_dir, "plan", "show", "FIRE"))["ecv_set_by_station"] is True


def test_the_premises_phone_is_set_and_cleared(data_dir: Path) -> None:
    shown = as_dict(cli_json(data_dir, "account", "set", ACCOUNT, "--phone", "(815) 555-0100"))
    assert shown["phone"] == "(815) 555-0100"
    refused = cli(data_dir, "account", "set", ACCOUNT, "--phone", "call me", check=False)
    assert refused.returncode == 1 and "may hold only digits" in refused.stderr
    assert as_dict(cli_json(data_dir, "account", "set", ACCOUNT, "--phone", ""))["phone"] == ""
