"""``store_commit_timeout`` (decisions §14): its default, the environment variable and the
command line's option, and the values refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from alarmhub.cli import main
from alarmhub.core.errors import SettingsError
from alarmhub.settings import load


def test_the_default_is_ten_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALARMHUB_STORE_COMMIT_TIMEOUT", raising=False)
    assert load(tmp_path).store_commit_timeout == 10.0


def test_the_environment_and_the_option_set_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALARMHUB_STORE_COMMIT_TIMEOUT", "2.5")
    assert load(tmp_path).store_commit_timeout == 2.5
    assert load(tmp_path, store_commit_timeout=4).store_commit_timeout == 4.0  # the option wins


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_timeout_that_is_no_positive_number_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("ALARMHUB_STORE_COMMIT_TIMEOUT", value)
    with pytest.raises(SettingsError, match=r"(?i)store_commit_timeout"):
        load(tmp_path)


def test_serve_takes_the_option() -> None:
    shown = CliRunner().invoke(main, ["serve", "--help"])
    assert shown.exit_code == 0
    assert "--store-commit-timeout" in shown.stdout
    refused = CliRunner().invoke(main, ["serve", "--store-commit-timeout", "0"])
    assert refused.exit_code == 2  # a usage error, before anything starts
