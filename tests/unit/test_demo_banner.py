"""The demo's start banner: its "try it" command names the node's address when the node is not
where the command line calls by default, and a credentials file of an older version (which
kept a "try it" line of its own) shows one command, the right one."""

from __future__ import annotations

from pathlib import Path

from alarmhub import demo
from alarmhub.settings import DEFAULT_URL

CODES = ("Ann", "1234", "5678")


def test_the_command_names_the_address_only_off_the_default() -> None:
    assert "--url" not in demo.try_it("tok", DEFAULT_URL)
    other = demo.try_it("tok", "http://127.0.0.1:8081")
    assert other.startswith("ALARMHUB_TOKEN=tok .venv/bin/alarmhub send demo-site:demo ")
    assert " --url http://127.0.0.1:8081 " in other


def test_the_banner_has_one_try_it_line_for_the_address_given(tmp_path: Path) -> None:
    text = demo.credentials_text("tok", "pw", CODES)
    old = f"{demo.TRY_IT}ALARMHUB_TOKEN=tok .venv/bin/alarmhub send demo-site:demo --dnis 1234\n"
    (tmp_path / demo.CREDENTIALS_FILE).write_text(text + old)
    banner = demo.banner(tmp_path, "http://127.0.0.1:8081")
    assert banner is not None
    lines = [line for line in banner.splitlines() if line.startswith(demo.TRY_IT)]
    assert lines == [
        f"{demo.TRY_IT}{demo.try_it('tok', 'http://127.0.0.1:8081')}   # KITCHEN SMOKE"
    ]
    assert banner.startswith(text)
    assert demo.banner(tmp_path / "removed", DEFAULT_URL) is None
